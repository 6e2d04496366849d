package profiler

import (
	"math"
	"testing"

	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

func snap(mono uint64, counters map[Key]Counter, threads map[uint32]ThreadInfo, clocks map[uint32]Clock) *Snapshot {
	return &Snapshot{MonoNS: mono, Counters: counters, Threads: threads, Clocks: clocks}
}

func TestDeltaWrapsAndBaselines(t *testing.T) {
	const ms = uint64(1e6)
	threads := map[uint32]ThreadInfo{
		1:       {Gen: 1, TID: 10, TGID: 10, Comm: "a"},                                           // registered at start
		2:       {Gen: 2, TID: 11, TGID: 10, Comm: "b", StartNS: 5_000 * ms},                      // born during the interval
		1 << 24: {Gen: 1 << 24, TID: 12, TGID: 10, Comm: "c", StartNS: 1, FirstRuntimeNS: 7 * ms}, // older, first seen later
	}
	prev := snap(1_000*ms, map[Key]Counter{
		// A counter that wraps between the two snapshots (u64, modular).
		{1, taxonomy.PathTxWrite, taxonomy.CtxTask}:         {Calls: math.MaxUint64 - 1, NS: math.MaxUint64 - 10, Bytes: 100},
		{0, taxonomy.PathSysIdle, taxonomy.CtxSoftirqNetRx}: {NS: 50},
	}, threads, map[uint32]Clock{1: {RuntimeNS: 100 * ms, UtimeNS: 10 * ms, StimeNS: 90 * ms}})
	cur := snap(3_000*ms, map[Key]Counter{
		{1, taxonomy.PathTxWrite, taxonomy.CtxTask}:         {Calls: 3, NS: 20*ms - 11, Bytes: 100 + 65536},
		{1, taxonomy.PathTxWrite, taxonomy.CtxSoftirqNetRx}: {NS: 5 * ms},
		{2, taxonomy.PathUser, taxonomy.CtxTask}:            {NS: 4 * ms},
		{1 << 24, taxonomy.PathOther, taxonomy.CtxTask}:     {NS: 3 * ms},
		{0, taxonomy.PathSysIdle, taxonomy.CtxSoftirqNetRx}: {NS: 80},
	}, threads, map[uint32]Clock{
		1:       {RuntimeNS: 125 * ms, UtimeNS: 10 * ms, StimeNS: 120 * ms},
		2:       {RuntimeNS: 4 * ms},
		1 << 24: {RuntimeNS: 10 * ms},
	})
	iv := Delta(prev, cur)
	if iv.DurationNS != 2_000*ms {
		t.Fatalf("duration %d", iv.DurationNS)
	}
	if len(iv.Threads) != 3 {
		t.Fatalf("%d threads", len(iv.Threads))
	}
	a := iv.Threads[0]
	if c := a.Counters[PathCtx{taxonomy.PathTxWrite, taxonomy.CtxTask}]; c.Calls != 5 || c.NS != 20*ms || c.Bytes != 65536 {
		t.Fatalf("wrapped counter delta %+v", c)
	}
	if a.MeasuredNS() != 25*ms || a.Runtime != 25*ms || !a.RuntimeKnown || a.RuntimeApprox || a.Stime != 30*ms || a.Utime != 0 {
		t.Fatalf("thread a: %+v measured %d", a, a.MeasuredNS())
	}
	if b := iv.Threads[1]; !b.RuntimeKnown || b.RuntimeApprox || b.Runtime != 4*ms {
		t.Fatalf("born thread: %+v", b)
	}
	if c := iv.Threads[2]; !c.RuntimeKnown || !c.RuntimeApprox || c.Runtime != 3*ms {
		t.Fatalf("first-seen thread: %+v", c)
	}
	if iv.System[PathCtx{taxonomy.PathSysIdle, taxonomy.CtxSoftirqNetRx}].NS != 30 {
		t.Fatalf("system row %+v", iv.System)
	}
	p, warn := CheckPrecision(iv, KernelClock{})
	if p.Checked != 2 || p.Unchecked != 1 || p.Failed != 0 || len(warn) != 0 {
		t.Fatalf("precision %+v %v", p, warn)
	}
}

func TestEntrySplitsContexts(t *testing.T) {
	tot := Totals{Counters: map[PathCtx]Counter{
		{taxonomy.PathUser, taxonomy.CtxTask}:            {NS: 100},
		{taxonomy.PathTxWrite, taxonomy.CtxTask}:         {Calls: 4, NS: 400, Bytes: 4 << 20},
		{taxonomy.PathTxWrite, taxonomy.CtxSoftirqNetRx}: {Calls: 2, NS: 200},
		{taxonomy.PathUser, taxonomy.CtxHardirq}:         {Calls: 1, NS: 10},
		{taxonomy.PathUnknown, taxonomy.CtxTask}:         {NS: 7},
		{taxonomy.PathTxWrite, taxonomy.CtxKernelDiff}:   {NS: 30},
		{taxonomy.PathOther, taxonomy.CtxKernelDiff}:     {NS: 5},
		{taxonomy.PathRxRead, taxonomy.CtxSoftirqOther}:  {Calls: 1, NS: 3},
	}, Runtime: 700}
	cpu, paths := tot.Entry()
	if cpu.UserNS != 100 || cpu.KernelNS != 407 || cpu.SoftirqNS != 203 || cpu.HardirqNS != 10 ||
		cpu.SoftirqNetRxNS != 200 || cpu.SoftirqOtherNS != 3 || cpu.OnCPUNS != 720 ||
		cpu.UnresolvedNS != 7 || cpu.SchedstatBoundaryNS != -35 {
		t.Fatalf("cpu %+v", cpu)
	}
	var sum uint64
	for _, p := range paths {
		sum += p.CPUNS
	}
	if sum != cpu.OnCPUNS {
		t.Fatalf("paths add up to %d, on-CPU %d: %+v", sum, cpu.OnCPUNS, paths)
	}
	w := paths[1]
	if w.Path != "tx.write" || w.Calls != 4 || w.Bytes != 4<<20 || w.SoftirqNS != 200 ||
		w.NSPerCall != 100 || w.NSPerMiB != 100 {
		t.Fatalf("tx.write %+v", w)
	}
}

func TestPrecisionBound(t *testing.T) {
	for _, c := range []struct{ runtime, bound uint64 }{
		{0, 2e6}, {100e6, 2e6}, {200e6, 2e6}, {1e9, 10e6},
	} {
		if got := PrecisionBound(c.runtime); got != c.bound {
			t.Errorf("PrecisionBound(%d) = %d, want %d", c.runtime, got, c.bound)
		}
	}
}

func TestSchedstatResidual(t *testing.T) {
	// 1 s of the workload and 3 ms of handlers, 4 ms of which the kernel
	// billed to another task at a wakeup: 999 ms as the kernel bills it.
	c := report.CPU{OnCPUNS: 1e9, ProbeNS: 3e6, SchedstatBoundaryNS: -4e6, SchedstatNS: 1.005e9, SwitchUncertainNS: 5e5}
	diff, bound := SchedstatResidual(c)
	if diff != 6e6 || bound != 10.55e6 {
		t.Errorf("SchedstatResidual(%+v) = %d, %d; want 6000000, 10550000", c, diff, bound)
	}
	c.SchedstatNS = 0.99e9
	if diff, _ := SchedstatResidual(c); diff != 9e6 {
		t.Errorf("SchedstatResidual(%+v) = %d, want 9000000", c, diff)
	}
}

func TestPrecisionFlagsAMismatch(t *testing.T) {
	iv := Interval{DurationNS: 2e9, Threads: []ThreadDelta{{
		Info:         ThreadInfo{TID: 5, Comm: "x"},
		Counters:     map[PathCtx]Counter{{taxonomy.PathUser, taxonomy.CtxTask}: {NS: 900e6}},
		Runtime:      1e9,
		RuntimeKnown: true,
	}}}
	p, warn := CheckPrecision(iv, KernelClock{})
	if p.Failed != 1 || len(warn) != 1 || p.MaxErrPct < 9.9 {
		t.Fatalf("%+v %v", p, warn)
	}
	// Short intervals are not checked.
	iv.DurationNS = 1e8
	if p, _ := CheckPrecision(iv, KernelClock{}); p.Checked != 0 || p.Unchecked != 1 {
		t.Fatalf("short interval checked: %+v", p)
	}
}

// TestDeltaInFlightAtFirstSnapshot: a thread first seen running has no
// path yet, so the first snapshot adds its in-flight time under "unknown",
// a key BPF never wrote. Its first boundary charges the whole span to the
// real path. The interval must hold only what ran since the snapshot,
// with no key wrapping to ~1.8e19 ns.
func TestDeltaInFlightAtFirstSnapshot(t *testing.T) {
	const ms = uint64(1e6)
	threads := map[uint32]ThreadInfo{1: {Gen: 1, TID: 10, TGID: 10, Comm: "a"}}
	prev := snap(1_000*ms, map[Key]Counter{
		{1, taxonomy.PathUnknown, taxonomy.CtxTask}:      {NS: 5 * ms}, // in flight only
		{1, taxonomy.PathUnknown, taxonomy.CtxHardirq}:   {NS: 1 * ms}, // BPF's, moved later
		{1, taxonomy.PathUser, taxonomy.CtxSoftirqNetRx}: {NS: 2 * ms},
	}, threads, map[uint32]Clock{1: {RuntimeNS: 100 * ms}})
	cur := snap(2_000*ms, map[Key]Counter{
		// The span from before prev to its first boundary: user.
		{1, taxonomy.PathUser, taxonomy.CtxTask}:         {NS: 8 * ms},
		{1, taxonomy.PathUnknown, taxonomy.CtxHardirq}:   {NS: 0}, // moved out (modular)
		{1, taxonomy.PathUser, taxonomy.CtxHardirq}:      {NS: 1 * ms},
		{1, taxonomy.PathUser, taxonomy.CtxSoftirqNetRx}: {NS: 2 * ms},
	}, threads, map[uint32]Clock{1: {RuntimeNS: 103 * ms}})
	iv := Delta(prev, cur)
	if len(iv.Threads) != 1 {
		t.Fatalf("%d threads", len(iv.Threads))
	}
	a := iv.Threads[0]
	for k, c := range a.Counters {
		if int64(c.NS) < 0 {
			t.Errorf("%v/%v wrapped: %d ns", k.Path, k.Ctx, c.NS)
		}
	}
	if got := a.Counters[PathCtx{taxonomy.PathUser, taxonomy.CtxTask}].NS; got != 3*ms {
		t.Errorf("user %d ns, want the 3 ms since the snapshot", got)
	}
	if a.MeasuredNS() != 3*ms || a.Runtime != 3*ms {
		t.Errorf("measured %d ns, schedstat %d ns, want 3 ms both", a.MeasuredNS(), a.Runtime)
	}
	cpu, _ := Sum(iv.Threads).Entry()
	if cpu.OnCPUNS != 3*ms || cpu.UnresolvedNS != 0 {
		t.Errorf("entry %+v", cpu)
	}
}
