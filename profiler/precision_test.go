package profiler

import (
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/taxonomy"
)

const ms = uint64(1e6)

// thread builds a checked thread: what zcprof charged (user time and
// interrupts), the kernel's runtime, and the per-run differences zcprof
// measured at its cuts (ours minus the kernel's run length, over runs).
func thread(tid int, userNS, irqNS, runtime uint64, kernelDiff int64, runs uint64) ThreadDelta {
	return ThreadDelta{
		Info: ThreadInfo{TID: tid, Comm: "t"},
		Counters: map[PathCtx]Counter{
			{taxonomy.PathUser, taxonomy.CtxTask}:               {NS: userNS},
			{taxonomy.PathUser, taxonomy.CtxSoftirqNetRx}:       {NS: irqNS},
			{taxonomy.PathTxWrite, taxonomy.CtxKernelDiff}:      {NS: uint64(kernelDiff), Calls: runs},
			{taxonomy.PathTxWrite, taxonomy.CtxSwitchUncertain}: {},
		},
		Runtime: runtime, RuntimeKnown: true,
	}
}

func check(t *testing.T, k KernelClock, steal uint64, threads ...ThreadDelta) (int, []string) {
	t.Helper()
	p, warn := CheckPrecision(Interval{DurationNS: 2e9, Threads: threads, StealNS: steal}, k)
	if p.Checked != len(threads) || p.Failed != len(threadsFailing(warn)) {
		t.Fatalf("precision %+v, warnings %q", p, warn)
	}
	// The terms explain the difference exactly, as documented.
	if p.DiffNS != p.Terms.BoundaryNS+p.Terms.IRQTimeNS+p.ResidualNS || p.DiffNS != int64(p.MeasuredNS-p.SchedstatNS) {
		t.Fatalf("terms do not add up: %+v", p)
	}
	return p.Failed, warn
}

func threadsFailing(warn []string) map[string]bool {
	out := map[string]bool{}
	for _, w := range warn {
		if who, _, ok := strings.Cut(w, ":"); ok && strings.HasPrefix(who, "thread ") {
			out[who] = true
		}
	}
	return out
}

// Totals as they are, the difference explained by the boundary term: two
// threads, the waker billed 2 ms less by the kernel than zcprof measured
// over 100 runs, the woken one 2 ms more.
func TestPrecisionExplainsTheBoundary(t *testing.T) {
	waker := thread(1, 500*ms, 0, 498*ms, 2e6, 100)
	woken := thread(2, 500*ms, 0, 502*ms, -2e6, 100)
	p, warn := CheckPrecision(Interval{DurationNS: 2e9, Threads: []ThreadDelta{waker, woken}}, KernelClock{})
	if p.Failed != 0 || len(warn) != 0 {
		t.Fatalf("%+v %q", p, warn)
	}
	if p.MeasuredNS != 1000*ms || p.SchedstatNS != 1000*ms || p.Terms.Runs != 200 || p.ResidualNS != 0 || p.MaxDiffPct < 0.39 {
		t.Fatalf("%+v", p)
	}
}

// A cut in the wrong place: zcprof ends each of the thread's 10 runs 1 ms
// after the kernel does (and starts the next thread's 1 ms late). zcprof's
// per-run difference measures it, so adding it back, as the check did
// before, equals schedstat exactly; as a term it is far more than any
// wakeup-preemption billing over 10 runs.
func TestPrecisionFailsAMisplacedCut(t *testing.T) {
	late := thread(1, 510*ms, 0, 500*ms, 10e6, 10)
	short := thread(2, 490*ms, 0, 500*ms, -10e6, 10)
	if failed, warn := check(t, KernelClock{}, 0, late, short); failed != 2 || !strings.Contains(warn[0], "a cut is far from where the kernel ends runs") {
		t.Fatalf("misplaced cut: %d failed, %q", failed, warn)
	}
	// Time charged to the wrong thread with no run to explain it.
	moved := thread(1, 510*ms, 0, 500*ms, 0, 10)
	lost := thread(2, 490*ms, 0, 500*ms, 0, 10)
	if failed, warn := check(t, KernelClock{}, 0, moved, lost); failed != 2 || !strings.Contains(warn[0], "charged it to another thread") {
		t.Fatalf("moved time: %d failed, %q", failed, warn)
	}
}

// With CONFIG_IRQ_TIME_ACCOUNTING the kernel's runs leave interrupt time
// out, so zcprof's per-run differences hold it: it is one term, taken out
// once (the check used to subtract it a second time). Leaving the term out
// fails the check.
func TestPrecisionIRQTimeAccounting(t *testing.T) {
	th := thread(1, 900*ms, 50*ms, 900*ms, 50e6, 100) // kernel: 950 ms on CPU less 50 ms of interrupts
	p, warn := CheckPrecision(Interval{DurationNS: 2e9, Threads: []ThreadDelta{th}}, KernelClock{IRQTime: true})
	if p.Failed != 0 || p.Terms.IRQTimeNS != 50e6 || p.Terms.BoundaryNS != 0 || p.ResidualNS != 0 {
		t.Fatalf("%+v %q", p, warn)
	}
	if failed, _ := check(t, KernelClock{}, 0, th); failed != 1 {
		t.Fatal("interrupt term dropped, check passed")
	}
}

// Stolen time is left out of the kernel's runs too (PARAVIRT_TIME_
// ACCOUNTING); it is known per host only, so it widens the boundary bound
// by the host's steal over the interval, and only where the kernel takes
// it out.
func TestPrecisionSteal(t *testing.T) {
	th := thread(1, 900*ms, 0, 880*ms, 20e6, 10)
	if failed, _ := check(t, KernelClock{Steal: true}, 30*ms, th); failed != 0 {
		t.Fatal("steal within the host's steal failed")
	}
	if failed, _ := check(t, KernelClock{}, 30*ms, th); failed != 1 {
		t.Fatal("steal on a kernel that does not leave it out passed")
	}
	if failed, _ := check(t, KernelClock{Steal: true}, 10*ms, th); failed != 1 {
		t.Fatal("more steal than the host had passed")
	}
}

func TestPrecisionCountsClampedRuns(t *testing.T) {
	p, warn := CheckPrecision(Interval{DurationNS: 2e9, ClampedRuns: 3, Threads: []ThreadDelta{thread(1, 100*ms, 0, 100*ms, 0, 5)}}, KernelClock{})
	if p.ClampedRuns != 3 || len(warn) != 1 || !strings.Contains(warn[0], "3 runs differed") {
		t.Fatalf("%+v %q", p, warn)
	}
}

// The boundary bound follows the thread's own calls: a waker runs on to
// the end of the call it was in, so where its calls are long (a slow
// machine, large sends) so are its tails. Ten runs 1 ms late each pass
// for a thread whose writes take 1 ms on average, and still fail for one
// whose calls are short.
func TestPrecisionBoundaryFollowsCallLength(t *testing.T) {
	withCalls := func(th ThreadDelta, callNS, calls uint64) ThreadDelta {
		th.Counters[PathCtx{taxonomy.PathTxWrite, taxonomy.CtxTask}] = Counter{NS: callNS * calls * 9 / 10, Calls: calls}
		th.Counters[PathCtx{taxonomy.PathTxWrite, taxonomy.CtxSoftirqNetRx}] = Counter{NS: callNS * calls / 10}
		th.Counters[PathCtx{taxonomy.PathUser, taxonomy.CtxTask}] = Counter{NS: th.Counters[PathCtx{taxonomy.PathUser, taxonomy.CtxTask}].NS - callNS*calls}
		return th
	}
	slow := withCalls(thread(1, 510*ms, 0, 500*ms, 10e6, 10), ms, 100)
	slowWoken := withCalls(thread(2, 490*ms, 0, 500*ms, -10e6, 10), ms, 100)
	if failed, warn := check(t, KernelClock{}, 0, slow, slowWoken); failed != 0 {
		t.Errorf("1 ms tails of 1 ms calls: %d failed, %q", failed, warn)
	}
	quick := withCalls(thread(1, 510*ms, 0, 500*ms, 10e6, 10), 20_000, 100)
	quickWoken := withCalls(thread(2, 490*ms, 0, 500*ms, -10e6, 10), 20_000, 100)
	if failed, _ := check(t, KernelClock{}, 0, quick, quickWoken); failed != 2 {
		t.Errorf("1 ms tails of 20 µs calls: %d failed, want both", failed)
	}
}
