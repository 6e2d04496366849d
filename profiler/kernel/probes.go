package kernel

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/zcprof/zcprof/bpf"
)

// Program names in bpf/probes.bpf.c.
const (
	progTpBTF = "doctor_tp_btf"
	progTpAny = "doctor_tp_any"
	progRawTp = "doctor_raw_tp"
	// progTpClassic is retargeted by link.Tracepoint at attach.
	progTpClassic = "doctor_tp_classic"
	progFentry    = "doctor_fentry"
	progKprobe    = "doctor_kprobe"
	progKmulti    = "doctor_kmulti"
	progPerf      = "doctor_perf"
	mapHits       = "doctor_hits"
	mapStacks     = "doctor_stacks"
	// ProbePrefix starts every probe program's name (a test looks for
	// leftovers by it).
	ProbePrefix = "doctor_"
)

// Slots of doctor_hits (enum doctor_hit in probes.bpf.c).
const (
	hitTpBTF uint32 = iota
	hitRawTp
	hitFentry
	hitKprobe
	hitKprobeMulti
	hitPerf
	hitPerfKstack
	hitTpAny
)

// Status of one probe (and of doctor's checks).
const (
	StatusOK          = "ok"
	StatusUnavailable = "unavailable"
	// StatusDegraded: usable only in a weaker form (e.g. attached but never
	// fired, or a function that shows up in stacks but cannot be attached).
	StatusDegraded = "degraded"
)

// Result is what one probe found: a Status and, in one line, what happened
// (with the kernel's error and its cause when it failed).
type Result struct {
	Status, Detail string
}

// Probes loads the probe programs one at a time: a kernel that rejects one
// attach kind (fentry here) must not take the others down with it, so
// there is no single collection load. All programs share one hits map.
// Everything a probe loads is closed before it returns.
type Probes struct {
	spec *ebpf.CollectionSpec
	hits *ebpf.Map
}

// NewProbes reads the probe object and creates the shared hits map.
func NewProbes() (*Probes, error) {
	spec, err := bpf.ProbesSpec()
	if err != nil {
		return nil, fmt.Errorf("read probe programs: %w", err)
	}
	hits, err := ebpf.NewMap(spec.Maps[mapHits])
	if err != nil {
		return nil, fmt.Errorf("create %s map: %w", mapHits, err)
	}
	return &Probes{spec: spec, hits: hits}, nil
}

// Close frees the hits map.
func (p *Probes) Close() error { return p.hits.Close() }

// load loads program name alone, retargeted at attachTo when not empty.
// The caller closes the returned collection (the program and, for the
// perf_event probe, its stack map).
func (p *Probes) load(name, attachTo string) (*ebpf.Collection, *ebpf.Program, error) {
	cs := p.spec.Copy()
	for n := range cs.Programs {
		if n != name {
			delete(cs.Programs, n)
		}
	}
	if name != progPerf {
		delete(cs.Maps, mapStacks)
	}
	if attachTo != "" {
		cs.Programs[name].AttachTo = attachTo
	}
	coll, err := ebpf.NewCollectionWithOptions(cs, ebpf.CollectionOptions{
		MapReplacements: map[string]*ebpf.Map{mapHits: p.hits},
		Cache:           bpf.KernelBTF,
	})
	if err != nil {
		return nil, nil, err
	}
	return coll, coll.Programs[name], nil
}

// count reads one hit counter.
func (p *Probes) count(slot uint32) uint64 {
	var v uint64
	if err := p.hits.Lookup(slot, &v); err != nil {
		return 0
	}
	return v
}

// attachFn attaches prog, returning the link to close.
type attachFn func(prog *ebpf.Program) (link.Link, error)

// attachOne loads name (retargeted at attachTo), attaches and detaches it.
// It returns "" on success, else the reason.
func (p *Probes) attachOne(e Env, kind, name, attachTo string, attach attachFn) string {
	coll, prog, err := p.load(name, attachTo)
	if err != nil {
		return e.Describe(kind, "load", err)
	}
	defer coll.Close()
	l, err := attach(prog)
	if err != nil {
		return e.Describe(kind, "attach", err)
	}
	l.Close()
	return ""
}
