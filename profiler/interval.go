package profiler

import (
	"sort"

	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// PathCtx is a counter key within one thread.
type PathCtx struct {
	Path taxonomy.Path
	Ctx  taxonomy.Ctx
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
	// ByteClasses: what the kernel did with its bytes. Classified: the
	// byte-class programs were loaded; without them ByteClasses holds
	// only what a request shows (byteclass.ClassRxDiscard), if anything.
	ByteClasses map[byteclass.PathClass]byteclass.Count
	Classified  bool
}

// MeasuredNS is the thread's on-CPU time as the BPF accounting saw it,
// zcprof's own handlers included (schedstat bills them).
func (t ThreadDelta) MeasuredNS() uint64 {
	var sum uint64
	for k, c := range t.Counters {
		if k.Ctx.OnCPU() || k.Ctx == taxonomy.CtxProbe {
			sum += c.NS
		}
	}
	return sum
}

// BoundaryNS is what the kernel's schedstat bills to this thread beyond
// (positive) or short of (negative) the time zcprof measured, because the
// kernel cuts runs where it last read the rq clock (see taxonomy.CtxKernelDiff).
func (t ThreadDelta) BoundaryNS() int64 {
	var diff uint64 // modular: the per-run differences are signed
	for k, c := range t.Counters {
		if k.Ctx == taxonomy.CtxKernelDiff {
			diff += c.NS
		}
	}
	return -int64(diff)
}

// UncertainNS is the time around unreported context switches whose owner
// is not known (see taxonomy.CtxSwitchUncertain).
func (t ThreadDelta) UncertainNS() uint64 {
	var sum uint64
	for k, c := range t.Counters {
		if k.Ctx == taxonomy.CtxSwitchUncertain {
			sum += c.NS
		}
	}
	return sum
}

// InterruptNS is the softirq and hardirq time that ran in the thread.
func (t ThreadDelta) InterruptNS() uint64 {
	var sum uint64
	for k, c := range t.Counters {
		if k.Ctx != taxonomy.CtxTask && k.Ctx.OnCPU() {
			sum += c.NS
		}
	}
	return sum
}

// ProbeNS is the time zcprof's own handlers ran in the thread, and the
// handler runs timed (see taxonomy.CtxProbe). It is part of MeasuredNS.
func (t ThreadDelta) ProbeNS() (ns, runs uint64) {
	for k, c := range t.Counters {
		if k.Ctx == taxonomy.CtxProbe {
			ns += c.NS
			runs += c.Calls
		}
	}
	return ns, runs
}

// Interval is what happened between two snapshots.
type Interval struct {
	DurationNS uint64
	Threads    []ThreadDelta
	System     map[PathCtx]Counter
	BPFMisses  uint64
	Dropped    uint64
	// MissedSwitches: see Snapshot.
	MissedSwitches uint64
	// ClampedRuns and StealNS: see Snapshot.
	ClampedRuns uint64
	StealNS     uint64
	// ByteClassDrops counts byte-class updates the maps refused.
	ByteClassDrops uint64
	// MapFull: the updates each BPF map refused for being full (stats:
	// Dropped; threads and thread_infos: threads left out), by map name.
	MapFull map[string]uint64
}

// mapFull is the updates each BPF map refused for being full between two
// readings (stats: Dropped; threads and thread_infos: threads left out).
func mapFull(prev, cur *Snapshot) map[string]uint64 {
	full := map[string]uint64{}
	for name, n := range map[string]uint64{"stats": cur.Dropped - prev.Dropped,
		"threads": cur.ThreadsFull - prev.ThreadsFull, "thread_infos": cur.ThreadInfosFull - prev.ThreadInfosFull} {
		if n > 0 {
			full[name] = n
		}
	}
	return full
}

// Delta computes cur - prev. prev may be nil (everything since attach).
func Delta(prev, cur *Snapshot) Interval {
	if prev == nil {
		prev = &Snapshot{Counters: map[Key]Counter{}, Threads: map[uint32]ThreadInfo{}, Clocks: map[uint32]Clock{}}
	}
	iv := Interval{
		DurationNS:     cur.MonoNS - prev.MonoNS,
		System:         map[PathCtx]Counter{},
		BPFMisses:      cur.BPFMisses - prev.BPFMisses,
		Dropped:        cur.Dropped - prev.Dropped,
		MissedSwitches: cur.MissedSwitches - prev.MissedSwitches,
		ClampedRuns:    cur.ClampedRuns - prev.ClampedRuns,
		StealNS:        sat(cur.StealNS, prev.StealNS),
	}
	byGen := map[uint32]*ThreadDelta{}
	// Every key of either snapshot: a key that held only in-flight time in
	// prev (addInFlight) can be absent from cur, and its time must still be
	// taken off.
	keys := make(map[Key]bool, len(cur.Counters))
	for k := range cur.Counters {
		keys[k] = true
	}
	for k := range prev.Counters {
		keys[k] = true
	}
	thread := func(gen uint32) *ThreadDelta {
		td := byGen[gen]
		if td == nil {
			td = &ThreadDelta{Counters: map[PathCtx]Counter{}}
			td.Info, _ = cur.info(gen)
			td.Info.Gen = gen
			byGen[gen] = td
		}
		return td
	}
	for k := range keys {
		d := cur.Counters[k].sub(prev.Counters[k])
		if d == (Counter{}) {
			continue
		}
		pc := PathCtx{k.Path, k.Ctx}
		if to, ok := retiredTo(prev, cur, k.Gen); ok {
			k.Gen = to // a thread retired since prev: its row has its counts
		}
		if k.Gen == 0 {
			iv.System[pc] = iv.System[pc].add(d)
			continue
		}
		td := thread(k.Gen)
		td.Counters[pc] = td.Counters[pc].add(d)
	}
	for gen, row := range cur.retiredRows {
		was := prev.retiredRows[gen]
		if was == row {
			continue // unchanged since prev
		}
		for pc, c := range row.counters {
			d := c
			if was != nil {
				d = c.sub(was.counters[pc])
			}
			if d != (Counter{}) {
				td := thread(gen)
				td.Counters[pc] = td.Counters[pc].add(d)
			}
		}
	}
	netNegative(iv.System)
	for _, td := range byGen {
		netNegative(td.Counters)
	}
	deltaByteClasses(prev, cur, thread, &iv)
	if cur.Classified {
		for _, td := range byGen {
			td.Classified = true
			if td.ByteClasses == nil {
				td.ByteClasses = map[byteclass.PathClass]byteclass.Count{}
			}
		}
	}
	iv.MapFull = mapFull(prev, cur)
	retiredAdj := retiredSincePrev(prev, cur)
	for gen, td := range byGen {
		now, ok := cur.clock(gen)
		if !ok {
			continue
		}
		base, known, approx := baseline(prev, td.Info, gen)
		if !known {
			continue
		}
		if adj, ok := retiredAdj[gen]; ok {
			base.RuntimeNS += adj.RuntimeNS
			base.UtimeNS += adj.UtimeNS
			base.StimeNS += adj.StimeNS
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

// deltaByteClasses adds the byte-class differences of two snapshots to the
// interval's threads (thread finds or makes a thread's entry, for threads
// with no CPU change).
func deltaByteClasses(prev, cur *Snapshot, thread func(gen uint32) *ThreadDelta, iv *Interval) {
	if cur.ByteClasses == nil {
		return
	}
	iv.ByteClassDrops = cur.ByteClassDrops - prev.ByteClassDrops
	add := func(gen uint32, pc byteclass.PathClass, d byteclass.Count) {
		td := thread(gen)
		if td.ByteClasses == nil {
			td.ByteClasses = map[byteclass.PathClass]byteclass.Count{}
		}
		td.ByteClasses[pc] = td.ByteClasses[pc].Add(d)
	}
	keys := make(map[byteclass.Key]bool, len(cur.ByteClasses))
	for k := range cur.ByteClasses {
		keys[k] = true
	}
	for k := range prev.ByteClasses {
		keys[k] = true // a retired thread's keys are gone from cur
	}
	for k := range keys {
		d := cur.ByteClasses[k].Sub(prev.ByteClasses[k])
		if d == (byteclass.Count{}) || k.Gen == 0 {
			continue
		}
		if to, ok := retiredTo(prev, cur, k.Gen); ok {
			k.Gen = to
		}
		add(k.Gen, byteclass.PathClass{Path: k.Path, Class: k.Class}, d)
	}
	for gen, row := range cur.retiredRows {
		was := prev.retiredRows[gen]
		if was == row {
			continue
		}
		for pc, c := range row.bytes {
			d := c
			if was != nil {
				d = c.Sub(was.bytes[pc])
			}
			if d != (byteclass.Count{}) {
				add(gen, pc, d)
			}
		}
	}
}

// netNegative settles on-CPU time that went down between two snapshots.
// prev's in-flight time (addInFlight) went under the key the thread's CPU
// state named then; BPF may charge that span to another key of the same
// thread (a thread first seen is in "unknown" until its first boundary,
// which moves its time to the real path), so that key's delta is
// negative: the time is in another key's delta already. Take it from the
// largest positive keys of the same context, so that no figure wraps and
// the thread's total stays exact.
func netNegative(counters map[PathCtx]Counter) {
	for k, c := range counters {
		if !k.Ctx.OnCPU() || int64(c.NS) >= 0 {
			continue
		}
		owed := -int64(c.NS)
		c.NS = 0
		counters[k] = c
		for owed > 0 {
			var best PathCtx
			var bestNS int64
			for o, oc := range counters {
				if o.Ctx == k.Ctx && int64(oc.NS) > bestNS {
					best, bestNS = o, int64(oc.NS)
				}
			}
			if bestNS == 0 {
				break // nothing to take it from: the time was not in this interval
			}
			take := min(owed, bestNS)
			b := counters[best]
			b.NS -= uint64(take)
			counters[best] = b
			owed -= take
		}
	}
}

// baseline finds the kernel clocks of a thread at the start of the interval.
func baseline(prev *Snapshot, info ThreadInfo, gen uint32) (Clock, bool, bool) {
	if c, ok := prev.clock(gen); ok {
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
