package doctor

import (
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/zcprof/zcprof/bpf"
)

// Program names in bpf/probes.bpf.c.
const (
	progTpBTF   = "doctor_tp_btf"
	progTpAny   = "doctor_tp_any"
	progRawTp   = "doctor_raw_tp"
	progFentry  = "doctor_fentry"
	progKprobe  = "doctor_kprobe"
	progKmulti  = "doctor_kmulti"
	progPerf    = "doctor_perf"
	mapHits     = "doctor_hits"
	mapStacks   = "doctor_stacks"
	probePrefix = "doctor_" // every probe program's name starts with it
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

// probeSet loads the probe programs one at a time: a kernel that rejects
// one attach kind (fentry here) must not take the others down with it, so
// there is no single collection load. All programs share one hits map.
type probeSet struct {
	spec *ebpf.CollectionSpec
	hits *ebpf.Map
}

func newProbeSet() (*probeSet, error) {
	spec, err := bpf.ProbesSpec()
	if err != nil {
		return nil, fmt.Errorf("read probe programs: %w", err)
	}
	hits, err := ebpf.NewMap(spec.Maps[mapHits])
	if err != nil {
		return nil, fmt.Errorf("create %s map: %w", mapHits, err)
	}
	return &probeSet{spec: spec, hits: hits}, nil
}

func (p *probeSet) Close() error { return p.hits.Close() }

// load loads program name alone, retargeted at attachTo when not empty.
// The caller closes the returned collection (the program and, for the
// perf_event probe, its stack map).
func (p *probeSet) load(name, attachTo string) (*ebpf.Collection, *ebpf.Program, error) {
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
func (p *probeSet) count(slot uint32) uint64 {
	var v uint64
	if err := p.hits.Lookup(slot, &v); err != nil {
		return 0
	}
	return v
}
