package profiler

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/kernel"
)

// attachPoint is one tracepoint the accounting needs, with its program name
// in each backend (the C file defines every handler twice).
type attachPoint struct {
	tracepoint string
	optional   string // non-empty: a feature that is lost when it fails
}

// corePoints are attached in this order: every exit before its entry. An
// interrupt (or syscall) entered while only its entry program was attached
// would never be seen to exit, and its CPU's time would be billed to it
// until the next switch; one seen exiting without its entry is handled
// (on_exit_ctx: the time since the last event was its own).
var corePoints = []attachPoint{
	{tracepoint: "sys_exit"},
	{tracepoint: "sys_enter"},
	{tracepoint: "sched_switch"},
	{tracepoint: "softirq_exit"},
	{tracepoint: "softirq_entry"},
	{tracepoint: "irq_handler_exit"},
	{tracepoint: "irq_handler_entry"},
	{tracepoint: "sched_process_fork"},
	{tracepoint: "sched_process_exec"},
	{tracepoint: "sched_process_exit"},
}

var optionalPoints = []attachPoint{
	{tracepoint: "sock_send_length", optional: "io_uring send bytes"},
}

var programNames = map[string]string{
	"sys_enter":          "sys_enter",
	"sys_exit":           "sys_exit",
	"sched_switch":       "sched_switch",
	"softirq_entry":      "softirq_entry",
	"softirq_exit":       "softirq_exit",
	"irq_handler_entry":  "irq_entry",
	"irq_handler_exit":   "irq_exit",
	"sched_process_fork": "fork",
	"sched_process_exec": "exec",
	"sched_process_exit": "exit",
	"sock_send_length":   "sock_send_length",
}

func programName(backend, tracepoint string) string {
	prefix := "btf_"
	if backend == kernel.RawTp {
		prefix = "raw_"
	}
	return prefix + programNames[tracepoint]
}

// loaded is a set of programs and links that share the accounting maps.
type loaded struct {
	colls []*ebpf.Collection
	links []link.Link
	progs []*ebpf.Program
}

func (l *loaded) Close() error {
	var errs []error
	for _, lk := range l.links {
		errs = append(errs, lk.Close())
	}
	for _, c := range l.colls {
		c.Close()
	}
	l.links, l.colls, l.progs = nil, nil, nil
	return errors.Join(errs...)
}

// loadGroup loads only the named programs of spec; shared, if set, supplies
// the maps (including .data/.rodata/.bss) of an earlier group so that all
// groups count into the same place.
func loadGroup(spec *ebpf.CollectionSpec, names []string, shared map[string]*ebpf.Map) (*ebpf.Collection, error) {
	s := spec.Copy()
	keep := map[string]bool{}
	for _, n := range names {
		keep[n] = true
	}
	for name := range s.Programs {
		if !keep[name] {
			delete(s.Programs, name)
		}
	}
	return ebpf.NewCollectionWithOptions(s, ebpf.CollectionOptions{MapReplacements: shared, Cache: bpf.KernelBTF})
}

// loadBackend loads and attaches the core programs of one backend; all or
// nothing. The optional programs, when asked for, are attached afterwards,
// each on its own.
func loadBackend(spec *ebpf.CollectionSpec, backend string, optional bool, unavailable map[string]string) (*loaded, *ebpf.Collection, error) {
	l := &loaded{}
	var names []string
	for _, p := range corePoints {
		names = append(names, programName(backend, p.tracepoint))
	}
	core, err := loadGroup(spec, names, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: load: %w", backend, bpf.ShortError(err))
	}
	l.colls = append(l.colls, core)
	for _, p := range corePoints {
		prog := core.Programs[programName(backend, p.tracepoint)]
		lk, err := kernel.AttachProgram(backend, p.tracepoint, prog)
		if err != nil {
			l.Close()
			return nil, nil, fmt.Errorf("%s: attach %s: %w", backend, p.tracepoint, err)
		}
		l.links = append(l.links, lk)
		l.progs = append(l.progs, prog)
	}
	for _, p := range optionalPoints {
		if !optional {
			break
		}
		name := programName(backend, p.tracepoint)
		coll, err := loadGroup(spec, []string{name}, core.Maps)
		if err != nil {
			unavailable[p.optional] = fmt.Sprintf("tracepoint %s: %v", p.tracepoint, bpf.ShortError(err))
			continue
		}
		lk, err := kernel.AttachProgram(backend, p.tracepoint, coll.Programs[name])
		if err != nil {
			coll.Close()
			unavailable[p.optional] = fmt.Sprintf("tracepoint %s: %v", p.tracepoint, err)
			continue
		}
		l.colls = append(l.colls, coll)
		l.links = append(l.links, lk)
		l.progs = append(l.progs, coll.Programs[name])
	}
	return l, core, nil
}

// statsEntries and threadsEntries, when set (by tests), replace the stats
// and threads maps' sizes, so that a test can fill them with a few hundred
// processes.
var statsEntries, threadsEntries uint32

// accountingSpec returns the compiled accounting object with its
// configuration constants set.
func accountingSpec(cfg filterConfig, byteClasses string, ownerSplit bool) (*ebpf.CollectionSpec, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("remove memlock limit: %w", err)
	}
	spec, err := bpf.LoadAccounting()
	if err != nil {
		return nil, fmt.Errorf("parse accounting object: %w", err)
	}
	if statsEntries != 0 {
		spec.Maps["stats"].MaxEntries = statsEntries
	}
	// Preallocated where it fits: allocated at insert, a burst of new
	// threads had counts refused with the map far from full.
	if _, err := bpf.Preallocate(spec.Maps["stats"]); err != nil {
		return nil, err
	}
	if threadsEntries != 0 {
		spec.Maps["threads"].MaxEntries = threadsEntries
	}
	if !ownerSplit {
		// Never written without the owner programs: no memory for them.
		for _, name := range ownerSplitMaps {
			spec.Maps[name].MaxEntries = 1
		}
	}
	if err := byteclass.SetupAccounting(spec, byteClasses); err != nil {
		return nil, fmt.Errorf("accounting object: %w", err)
	}
	set := func(name string, v any) error {
		vs, ok := spec.Variables[name]
		if !ok {
			return fmt.Errorf("accounting object has no variable %s", name)
		}
		return vs.Set(v)
	}
	var comm [16]byte
	copy(comm[:], cfg.comm)
	for name, v := range map[string]any{
		"cfg_filter":          cfg.filter,
		"cfg_follow_children": boolU32(cfg.followChildren),
		"cfg_self_tgid":       cfg.selfTgid,
		"cfg_comm":            comm,
	} {
		if err := set(name, v); err != nil {
			return nil, err
		}
	}
	return spec, nil
}

func boolU32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// sharedMapNames are the accounting maps that every object reading the
// accounting declares too (bpf/common.h), and the softirq owner split's
// (bpf/owner_split.h).
var sharedMapNames = append([]string{"threads", "cpu_states"}, ownerSplitMaps...)

// ownerSplitMaps are the owner split's maps, in the accounting object.
var ownerSplitMaps = []string{"owner_stats", "owner_segs", "owner_pending", "owner_drops"}

// SharedMaps returns the session's maps for every accounting map spec
// declares, to pass as ebpf.CollectionOptions.MapReplacements: an object
// must never use its own copy. A size mismatch means the object was not
// regenerated after bpf/accounting.h changed.
func (s *Session) SharedMaps(spec *ebpf.CollectionSpec) (map[string]*ebpf.Map, error) {
	if _, ok := spec.Maps[ownerSplitMaps[0]]; ok && !s.ownerSplit {
		return nil, errors.New("the accounting session was opened without OwnerSplit")
	}
	repl := map[string]*ebpf.Map{}
	for _, name := range sharedMapNames {
		ms, ok := spec.Maps[name]
		if !ok {
			continue
		}
		m := s.core.Maps[name]
		if m == nil {
			return nil, fmt.Errorf("the accounting session has no %s map", name)
		}
		if ms.KeySize != m.KeySize() || ms.ValueSize != m.ValueSize() {
			return nil, fmt.Errorf("map %s: %d/%d-byte key/value, the accounting's are %d/%d: an object in bpf/ is stale, run make generate",
				name, ms.KeySize, ms.ValueSize, m.KeySize(), m.ValueSize())
		}
		// Sized by the accounting (accountingSpec): the object's
		// declaration must agree, or the replacement is refused.
		ms.MaxEntries = m.MaxEntries()
		repl[name] = m
	}
	return repl, nil
}
