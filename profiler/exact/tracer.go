package exact

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/kernel"
)

// Host is the accounting session whose maps the tracer reads (thread
// generations and paths); *profiler.Session implements it.
type Host interface {
	Maps() map[string]*ebpf.Map
	TrackPrograms(progs ...*ebpf.Program)
	Backend() string // "tp_btf" or "raw_tp": the clock programs use the same
}

// Options configure Attach.
type Options struct {
	Mode      string     // kernel.Fentry or kernel.Kprobe
	Functions []Function // default: Functions
	// Kernel is what the running kernel has; default ReadKernelInfo.
	Kernel *KernelInfo
}

// Tracer is the loaded backend. Close releases every link, program and map.
type Tracer struct {
	mode        string
	clock       *ebpf.Collection
	colls       []*ebpf.Collection
	links       []link.Link
	progs       []*ebpf.Program
	attached    []Function
	unavailable map[string]string // function name -> reason
	// probes are each attached function's entry and exit, for what the
	// kernel says it skipped (see missed).
	probes map[uint8]funcProbes
	// noMissedCounts says why kprobe misses cannot be known ("" if they can).
	noMissedCounts string
}

type funcProbes struct {
	links []link.Link
	progs []*ebpf.Program
}

// Error is a failed Attach. Nothing is left loaded.
type Error struct {
	Mode string
	// Reason is one line: the kernel's reason, in doctor's words.
	Reason string
	// Functions holds each function's own reason.
	Functions map[string]string
}

func (e *Error) Error() string { return e.Reason }

// Shared accounting maps the object declares (and must be given).
var sharedMaps = []string{"threads", "cpu_states"}

// clockPoints are the tracepoints of the clock programs, with the program
// name suffix (fxb_ for tp_btf, fxr_ for raw_tp).
var clockPoints = []struct{ tracepoint, suffix string }{
	{"sched_switch", "switch"},
	{"softirq_entry", "si_entry"},
	{"softirq_exit", "si_exit"},
	{"irq_handler_entry", "irq_entry"},
	{"irq_handler_exit", "irq_exit"},
}

// Attach loads the clock programs, then each function's entry/exit pair
// in a collection of its own. It fails only when the clock programs fail
// or no function attaches; otherwise Unavailable lists what was refused.
func Attach(h Host, opts Options) (*Tracer, error) {
	if opts.Mode != kernel.Fentry && opts.Mode != kernel.Kprobe {
		return nil, fmt.Errorf("function-exact mode %q: use %s or %s", opts.Mode, kernel.Fentry, kernel.Kprobe)
	}
	funcs := opts.Functions
	if funcs == nil {
		funcs = Functions
	}
	k := opts.Kernel
	if k == nil {
		ki := ReadKernelInfo(funcs)
		k = &ki
	}
	spec, err := bpf.LoadFuncexact()
	if err != nil {
		return nil, fmt.Errorf("parse funcexact object: %w", err)
	}
	t := &Tracer{mode: opts.Mode, unavailable: map[string]string{}, probes: map[uint8]funcProbes{}}
	if err := t.loadClock(spec, h); err != nil {
		t.Close()
		return nil, &Error{Mode: opts.Mode, Reason: err.Error()}
	}
	try, skipped := Plan(opts.Mode, funcs, *k)
	for name, why := range skipped {
		t.unavailable[name] = why
	}
	for _, f := range try {
		if why := t.attachFunction(spec, h, f); why != "" {
			t.unavailable[f.Name] = why
			continue
		}
		t.attached = append(t.attached, f)
	}
	if len(t.attached) == 0 {
		reasons := t.unavailable
		t.Close()
		return nil, &Error{Mode: opts.Mode, Reason: summarize(opts.Mode, reasons), Functions: reasons}
	}
	if opts.Mode == kernel.Kprobe && !t.kprobeMissedCounted() {
		t.noMissedCounts = "this kernel has no kprobe link info (6.6+, with the missed count 6.7+): calls a kprobe or kretprobe " +
			"skipped cannot be detected; the BPF recursion guard's skips still are"
	}
	h.TrackPrograms(t.progs...)
	return t, nil
}

// unavailableKprobeMissed is the backends.unavailable key for kernels that
// do not report kprobe misses.
const unavailableKprobeMissed = "kprobe missed counts"

// kprobeMissedCounted reports whether the kernel gives the kprobe links'
// missed counts (perf-event link info, 6.6+; 6.6 itself reads 0).
func (t *Tracer) kprobeMissedCounted() bool {
	if len(t.links) == 0 {
		return false
	}
	info, err := t.links[len(t.links)-1].Info() // a function's probe; the clock's links come first
	if err != nil {
		return false
	}
	pe := info.PerfEvent()
	return pe != nil && pe.Kprobe() != nil
}

// loadClock loads and attaches the clock programs, which own the fx_* maps.
func (t *Tracer) loadClock(spec *ebpf.CollectionSpec, h Host) error {
	maps := h.Maps()
	repl := map[string]*ebpf.Map{}
	for _, name := range sharedMaps {
		m, ok := maps[name]
		if !ok {
			return fmt.Errorf("accounting session has no %s map", name)
		}
		repl[name] = m
	}
	rawTP := h.Backend() == kernel.RawTp
	prefix := "fxb_"
	if rawTP {
		prefix = "fxr_"
	}
	var names []string
	for _, p := range clockPoints {
		names = append(names, prefix+p.suffix)
	}
	// Softirqs switched out inside (PREEMPT_RT only): one a CPU at most.
	spec.Maps["fx_suspended"].MaxEntries = 1
	if kernel.ReadHost().PreemptRT {
		cpus, err := ebpf.PossibleCPU()
		if err != nil {
			return err
		}
		spec.Maps["fx_suspended"].MaxEntries = uint32(cpus)
	}
	coll, err := loadOnly(spec, names, repl)
	if err != nil {
		return fmt.Errorf("function-exact clock programs: load: %v", bpf.ShortError(err))
	}
	t.clock = coll
	for _, p := range clockPoints {
		prog := coll.Programs[prefix+p.suffix]
		l, err := kernel.AttachProgram(h.Backend(), p.tracepoint, prog)
		if err != nil {
			return fmt.Errorf("function-exact clock programs: attach %s: %v", p.tracepoint, bpf.ShortError(err))
		}
		t.links = append(t.links, l)
		t.progs = append(t.progs, prog)
	}
	return nil
}

// attachFunction loads f's pair alone and attaches the exit before the
// entry, so that no frame is opened without a live exit. It returns "" or
// the reason, in doctor's words.
func (t *Tracer) attachFunction(spec *ebpf.CollectionSpec, h Host, f Function) string {
	entry, exit := "fe_"+f.Short, "fx_"+f.Short
	if t.mode == kernel.Kprobe {
		entry, exit = "kp_"+f.Short, "kr_"+f.Short
	}
	repl := map[string]*ebpf.Map{}
	for name, m := range t.clock.Maps {
		repl[name] = m
	}
	for _, name := range sharedMaps {
		repl[name] = h.Maps()[name]
	}
	coll, err := loadOnly(spec, []string{entry, exit}, repl)
	if err != nil {
		return kernel.Describe(t.mode, "load", bpf.ShortError(err))
	}
	var links []link.Link
	for _, name := range []string{exit, entry} {
		l, err := t.attachOne(f.Name, name, coll.Programs[name])
		if err != nil {
			for _, l := range links {
				l.Close()
			}
			coll.Close()
			return kernel.Describe(t.mode, "attach", err)
		}
		links = append(links, l)
	}
	t.colls = append(t.colls, coll)
	t.links = append(t.links, links...)
	progs := []*ebpf.Program{coll.Programs[exit], coll.Programs[entry]}
	t.progs = append(t.progs, progs...)
	t.probes[f.ID] = funcProbes{links: links, progs: progs}
	return ""
}

// missed is how many calls of each attached function the kernel skipped,
// by function id: a kprobe or kretprobe that did not fire (reentered from
// another probe's handler on the same CPU, or out of kretprobe instances;
// the link's missed count, 6.7+) and program runs the BPF recursion guard
// refused (bpf_prog_active for kprobes: a probe hit from an interrupt
// while another kprobe program runs; the trampoline's own guard for
// fentry). Such a call is absent from the counters, or half-seen. Kernels
// that do not count a kind report 0 for it.
func (t *Tracer) missed() map[uint8]uint64 {
	out := map[uint8]uint64{}
	for id, fp := range t.probes {
		var n uint64
		for _, l := range fp.links {
			if info, err := l.Info(); err == nil {
				if pe := info.PerfEvent(); pe != nil {
					if kp := pe.Kprobe(); kp != nil {
						n += kp.Missed
					}
				}
			}
		}
		for _, p := range fp.progs {
			if st, err := p.Stats(); err == nil {
				n += st.RecursionMisses
			}
		}
		if n > 0 {
			out[id] = n
		}
	}
	return out
}

func (t *Tracer) attachOne(fn, name string, prog *ebpf.Program) (link.Link, error) {
	switch {
	case t.mode == kernel.Fentry:
		return link.AttachTracing(link.TracingOptions{Program: prog})
	case strings.HasPrefix(name, "kr_"):
		return link.Kretprobe(fn, prog, nil)
	default:
		return link.Kprobe(fn, prog, nil)
	}
}

// loadOnly loads the named programs of spec with every map replaced or
// created from spec.
func loadOnly(spec *ebpf.CollectionSpec, names []string, repl map[string]*ebpf.Map) (*ebpf.Collection, error) {
	s := spec.Copy()
	keep := map[string]bool{}
	for _, n := range names {
		if _, ok := s.Programs[n]; !ok {
			return nil, fmt.Errorf("funcexact object has no program %s", n)
		}
		keep[n] = true
	}
	for n := range s.Programs {
		if !keep[n] {
			delete(s.Programs, n)
		}
	}
	return ebpf.NewCollectionWithOptions(s, ebpf.CollectionOptions{MapReplacements: repl, Cache: bpf.KernelBTF})
}

// summarize makes the one-line reason of a wholesale refusal: the common
// reason once when every function gave the same, else the first with a
// count of the others.
func summarize(mode string, reasons map[string]string) string {
	if len(reasons) == 0 {
		return mode + ": no function to attach"
	}
	names := make([]string, 0, len(reasons))
	for n := range reasons {
		names = append(names, n)
	}
	sort.Strings(names)
	// Prefer a kernel refusal over "not in kallsyms": it is the real cause.
	first := names[0]
	for _, n := range names {
		if strings.HasPrefix(reasons[n], mode+":") {
			first = n
			break
		}
	}
	why := strings.TrimPrefix(reasons[first], mode+": ")
	same := true
	for _, n := range names {
		if strings.TrimPrefix(reasons[n], mode+": ") != why {
			same = false
		}
	}
	if same {
		return fmt.Sprintf("%s: all %d functions refused: %s", mode, len(names), why)
	}
	return fmt.Sprintf("%s: no function attached; %s: %s (and %d more, each with its reason)", mode, first, why, len(names)-1)
}

// Mode is kernel.Fentry or kernel.Kprobe.
func (t *Tracer) Mode() string { return t.mode }

// Attached lists the functions that are traced, in table order.
func (t *Tracer) Attached() []Function { return t.attached }

// IsAttached reports whether function id is traced.
func (t *Tracer) IsAttached(id uint8) bool {
	for _, f := range t.attached {
		if f.ID == id {
			return true
		}
	}
	return false
}

// Unavailable maps each function that is not traced to the reason.
func (t *Tracer) Unavailable() map[string]string { return t.unavailable }

// ProgramIDs lists the kernel ids of the loaded programs.
func (t *Tracer) ProgramIDs() []uint32 {
	var ids []uint32
	for _, p := range t.progs {
		if info, err := p.Info(); err == nil {
			if id, ok := info.ID(); ok {
				ids = append(ids, uint32(id))
			}
		}
	}
	return ids
}

// Close detaches and frees everything; the programs are gone from the
// kernel when it returns. Safe to call more than once.
func (t *Tracer) Close() error {
	ids := t.ProgramIDs()
	var errs []error
	for _, l := range t.links {
		errs = append(errs, l.Close())
	}
	for _, c := range t.colls {
		c.Close()
	}
	if t.clock != nil {
		t.clock.Close()
	}
	t.links, t.colls, t.clock, t.progs, t.probes = nil, nil, nil, nil, nil
	bpf.WaitGone(ids)
	return errors.Join(errs...)
}
