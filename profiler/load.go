package profiler

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"

	"github.com/zcprof/zcprof/bpf"
)

// Accounting backends, in order of preference.
const (
	BackendTPBTF = "tp_btf"
	BackendRawTP = "raw_tp"
)

// attachPoint is one tracepoint the accounting needs, with its program name
// in each backend (the C file defines every handler twice).
type attachPoint struct {
	tracepoint string
	optional   string // non-empty: a feature that is lost when it fails
}

var corePoints = []attachPoint{
	{tracepoint: "sys_enter"},
	{tracepoint: "sys_exit"},
	{tracepoint: "sched_switch"},
	{tracepoint: "softirq_entry"},
	{tracepoint: "softirq_exit"},
	{tracepoint: "irq_handler_entry"},
	{tracepoint: "irq_handler_exit"},
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
	if backend == BackendRawTP {
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

func attach(backend, tracepoint string, prog *ebpf.Program) (link.Link, error) {
	if backend == BackendRawTP {
		return link.AttachRawTracepoint(link.RawTracepointOptions{Name: tracepoint, Program: prog})
	}
	return link.AttachTracing(link.TracingOptions{Program: prog})
}

// loadBackend loads and attaches the core programs of one backend; all or
// nothing. Optional programs are attached afterwards, each on its own.
func loadBackend(spec *ebpf.CollectionSpec, backend string, unavailable map[string]string) (*loaded, *ebpf.Collection, error) {
	l := &loaded{}
	var names []string
	for _, p := range corePoints {
		names = append(names, programName(backend, p.tracepoint))
	}
	core, err := loadGroup(spec, names, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: load: %w", backend, shortVerifierError(err))
	}
	l.colls = append(l.colls, core)
	for _, p := range corePoints {
		prog := core.Programs[programName(backend, p.tracepoint)]
		lk, err := attach(backend, p.tracepoint, prog)
		if err != nil {
			l.Close()
			return nil, nil, fmt.Errorf("%s: attach %s: %w", backend, p.tracepoint, err)
		}
		l.links = append(l.links, lk)
		l.progs = append(l.progs, prog)
	}
	for _, p := range optionalPoints {
		name := programName(backend, p.tracepoint)
		coll, err := loadGroup(spec, []string{name}, core.Maps)
		if err != nil {
			unavailable[p.optional] = fmt.Sprintf("tracepoint %s: %v", p.tracepoint, shortVerifierError(err))
			continue
		}
		lk, err := attach(backend, p.tracepoint, coll.Programs[name])
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

// shortVerifierError keeps the first line of a verifier log: users need the
// reason, not 2,000 lines of instructions.
func shortVerifierError(err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return fmt.Errorf("%s", strings.SplitN(ve.Error(), "\n", 2)[0])
	}
	return err
}

// accountingSpec returns the compiled accounting object with its
// configuration constants set.
func accountingSpec(cfg filterConfig) (*ebpf.CollectionSpec, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("remove memlock limit: %w", err)
	}
	spec, err := bpf.LoadAccounting()
	if err != nil {
		return nil, fmt.Errorf("parse accounting object: %w", err)
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
