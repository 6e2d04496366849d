package profiler

import (
	"sort"
)

// PathCtx is a counter key within one thread.
type PathCtx struct {
	Path Path
	Ctx  Ctx
}

// ThreadDelta is one thread's activity between two snapshots.
type ThreadDelta struct {
	Info     ThreadInfo
	Counters map[PathCtx]Counter
	// Runtime is the sum_exec_runtime delta. RuntimeKnown is false when no
	// baseline exists (a thread first seen mid-interval that was born
	// before it); RuntimeApprox when the baseline is BPF's first sighting.
	Runtime       uint64
	RuntimeKnown  bool
	RuntimeApprox bool
	// Utime and Stime are the times() deltas for the same thread.
	Utime, Stime uint64
	// ByteClasses: what the kernel did with its bytes; nil when the
	// byte-class programs are not loaded.
	ByteClasses map[PathClass]ByteCount
}

// MeasuredNS is the thread's on-CPU time as the BPF accounting saw it.
func (t ThreadDelta) MeasuredNS() uint64 {
	var sum uint64
	for k, c := range t.Counters {
		if k.Ctx.OnCPU() {
			sum += c.NS
		}
	}
	return sum
}

// BoundaryNS is what the kernel's schedstat bills to this thread beyond
// (positive) or short of (negative) the time zcprof measured, because the
// kernel cuts runs where it last read the rq clock (see CtxKernelDiff).
func (t ThreadDelta) BoundaryNS() int64 {
	var diff uint64 // modular: the per-run differences are signed
	for k, c := range t.Counters {
		if k.Ctx == CtxKernelDiff {
			diff += c.NS
		}
	}
	return -int64(diff)
}

// UncertainNS is the time around unreported context switches whose owner
// is not known (see CtxSwitchUncertain).
func (t ThreadDelta) UncertainNS() uint64 {
	var sum uint64
	for k, c := range t.Counters {
		if k.Ctx == CtxSwitchUncertain {
			sum += c.NS
		}
	}
	return sum
}

// InterruptNS is the softirq and hardirq time that ran in the thread.
func (t ThreadDelta) InterruptNS() uint64 {
	var sum uint64
	for k, c := range t.Counters {
		if k.Ctx != CtxTask && k.Ctx.OnCPU() {
			sum += c.NS
		}
	}
	return sum
}

// Interval is what happened between two snapshots.
type Interval struct {
	DurationNS uint64
	Threads    []ThreadDelta
	System     map[PathCtx]Counter
	BPFRunNS   uint64
	BPFEvents  uint64
	BPFMisses  uint64
	Dropped    uint64
	// MissedSwitches: see Snapshot.
	MissedSwitches uint64
	// ByteClassDrops counts byte-class updates the maps refused.
	ByteClassDrops uint64
}

// Delta computes cur - prev. prev may be nil (everything since attach).
func Delta(prev, cur *Snapshot) Interval {
	if prev == nil {
		prev = &Snapshot{Counters: map[Key]Counter{}, Threads: map[uint32]ThreadInfo{}, Clocks: map[uint32]Clock{}}
	}
	iv := Interval{
		DurationNS:     cur.MonoNS - prev.MonoNS,
		System:         map[PathCtx]Counter{},
		BPFRunNS:       cur.BPFRunNS - prev.BPFRunNS,
		BPFEvents:      cur.BPFEvents - prev.BPFEvents,
		BPFMisses:      cur.BPFMisses - prev.BPFMisses,
		Dropped:        cur.Dropped - prev.Dropped,
		MissedSwitches: cur.MissedSwitches - prev.MissedSwitches,
	}
	byGen := map[uint32]*ThreadDelta{}
	for k, c := range cur.Counters {
		d := c.sub(prev.Counters[k])
		if d == (Counter{}) {
			continue
		}
		pc := PathCtx{k.Path, k.Ctx}
		if k.Gen == 0 {
			iv.System[pc] = iv.System[pc].add(d)
			continue
		}
		td := byGen[k.Gen]
		if td == nil {
			td = &ThreadDelta{Info: cur.Threads[k.Gen], Counters: map[PathCtx]Counter{}}
			td.Info.Gen = k.Gen
			byGen[k.Gen] = td
		}
		td.Counters[pc] = td.Counters[pc].add(d)
	}
	deltaByteClasses(prev, cur, byGen, &iv)
	for gen, td := range byGen {
		now, ok := cur.Clocks[gen]
		if !ok {
			continue
		}
		base, known, approx := baseline(prev, td.Info, gen)
		if !known {
			continue
		}
		td.Runtime = now.RuntimeNS - base.RuntimeNS
		td.Utime = sat(now.UtimeNS, base.UtimeNS)
		td.Stime = sat(now.StimeNS, base.StimeNS)
		td.RuntimeKnown, td.RuntimeApprox = true, approx
	}
	for _, td := range byGen {
		iv.Threads = append(iv.Threads, *td)
	}
	sort.Slice(iv.Threads, func(i, j int) bool {
		a, b := iv.Threads[i].Info, iv.Threads[j].Info
		if a.TGID != b.TGID {
			return a.TGID < b.TGID
		}
		if a.TID != b.TID {
			return a.TID < b.TID
		}
		return a.Gen < b.Gen
	})
	return iv
}

// baseline finds the kernel clocks of a thread at the start of the interval.
func baseline(prev *Snapshot, info ThreadInfo, gen uint32) (Clock, bool, bool) {
	if c, ok := prev.Clocks[gen]; ok {
		return c, true, false
	}
	if info.StartNS != 0 && info.StartNS >= prev.MonoNS {
		return Clock{}, true, false // born during the interval
	}
	if info.StartNS != 0 {
		return Clock{RuntimeNS: info.FirstRuntimeNS}, true, true
	}
	return Clock{}, false, false
}

// sat subtracts without wrapping: times() figures are clamped monotonic by
// the kernel, but a thread's stat can be missing at one end.
func sat(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}
