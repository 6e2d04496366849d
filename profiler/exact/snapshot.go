package exact

import (
	"fmt"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// FuncKey addresses one function's figures: the accounting key it ran
// under (thread generation, path at its exit, context) and the function.
type FuncKey struct {
	profiler.Key
	Func uint8
}

// Stat is what BPF accumulated for a key.
type Stat struct {
	Calls uint64
	// NS is inclusive time with interrupts and off-CPU time removed.
	NS uint64
	// ChildNS is the part of NS spent in other traced functions it called.
	ChildNS uint64
	Bytes   uint64
}

// SelfNS is the time of the function's own code and of the untraced
// functions it called.
func (s Stat) SelfNS() uint64 {
	if s.ChildNS > s.NS {
		return 0
	}
	return s.NS - s.ChildNS
}

func (s Stat) add(o Stat) Stat {
	return Stat{s.Calls + o.Calls, s.NS + o.NS, s.ChildNS + o.ChildNS, s.Bytes + o.Bytes}
}

// sub is modular, like the accounting's counters.
func (s Stat) sub(o Stat) Stat {
	return Stat{s.Calls - o.Calls, s.NS - o.NS, s.ChildNS - o.ChildNS, s.Bytes - o.Bytes}
}

// Lost counts calls that were not measured (enum zc_fx_counter).
type Lost struct {
	NoFrame  uint64 // exit without its entry (attached mid-call)
	Overflow uint64 // nesting deeper than the frame stack
	Unwound  uint64 // frames whose exit was missed
	Dropped  uint64 // maps full
}

// Snapshot is one reading of the function counters.
type Snapshot struct {
	Stats map[FuncKey]Stat
	Lost  Lost
	// Missed is the calls the kernel skipped, per function id (see
	// Tracer.missed): not in Stats at all, or in Lost.
	Missed map[uint8]uint64
}

// Snapshot reads the counters (summed over CPUs).
func (t *Tracer) Snapshot() (*Snapshot, error) {
	snap := &Snapshot{Stats: map[FuncKey]Stat{}}
	var (
		k      bpf.FuncexactZcFxKey
		perCPU []bpf.FuncexactZcFxVal
	)
	it := t.clock.Maps["fx_stats"].Iterate()
	for it.Next(&k, &perCPU) {
		var s Stat
		for _, v := range perCPU {
			s = s.add(Stat{v.Calls, v.Ns, v.ChildNs, v.Bytes})
		}
		key := FuncKey{Key: profiler.Key{Gen: k.Gen, Path: taxonomy.Path(k.Path), Ctx: taxonomy.Ctx(k.Ctx)}, Func: k.Func}
		snap.Stats[key] = snap.Stats[key].add(s)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read fx_stats: %w", err)
	}
	lost := make([]uint64, 4)
	for i := range lost {
		if err := t.clock.Maps["fx_counters"].Lookup(uint32(i), &lost[i]); err != nil {
			return nil, fmt.Errorf("read fx_counters: %w", err)
		}
	}
	snap.Lost = Lost{NoFrame: lost[0], Overflow: lost[1], Unwound: lost[2], Dropped: lost[3]}
	snap.Missed = t.missed()
	return snap, nil
}

// Delta is cur - prev; prev may be nil (everything since attach).
func Delta(prev, cur *Snapshot) *Snapshot {
	d := &Snapshot{Stats: map[FuncKey]Stat{}, Missed: map[uint8]uint64{}}
	if prev == nil {
		prev = &Snapshot{Stats: map[FuncKey]Stat{}}
	}
	for id, n := range cur.Missed {
		if n > prev.Missed[id] {
			d.Missed[id] = n - prev.Missed[id]
		}
	}
	for k, s := range cur.Stats {
		if v := s.sub(prev.Stats[k]); v != (Stat{}) {
			d.Stats[k] = v
		}
	}
	d.Lost = Lost{
		NoFrame:  cur.Lost.NoFrame - prev.Lost.NoFrame,
		Overflow: cur.Lost.Overflow - prev.Lost.Overflow,
		Unwound:  cur.Lost.Unwound - prev.Lost.Unwound,
		Dropped:  cur.Lost.Dropped - prev.Lost.Dropped,
	}
	return d
}
