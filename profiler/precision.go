package profiler

import (
	"fmt"
	"time"

	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// Precision bounds of the self-check (docs/architecture.md): what zcprof charged must
// match sum_exec_runtime, once the known terms are taken out, within 1% or
// 2 ms, whichever is larger, for intervals of at least a second.
const (
	precisionPct   = 1.0
	precisionFloor = 2 * time.Millisecond
	precisionMinIv = time.Second
	// boundaryPerRun bounds the boundary term per run, or the thread's
	// longest mean syscall (callLength) where that is longer. After a
	// wakeup preemption the kernel ends the waker's run at the wakeup
	// (the rq clock is not read again before the switch), and the waker
	// goes on until its next preemption point: on a PREEMPT_NONE kernel
	// the end of its syscall. That is the boundary term's only legitimate
	// source besides the clock-offset estimate's error, so a run
	// disagreeing by more than a syscall's length means a cut in the
	// wrong place. 100 µs is several socket calls natively; under
	// emulation (the vmtest guests) one 64 KiB write takes longer, and
	// so do the tails.
	boundaryPerRun = 100 * time.Microsecond
)

// callLength is the longest mean on-CPU length of one call among the
// thread's syscall paths, interrupts inside the calls included: how far
// past a wakeup its run can legitimately go on.
func callLength(th ThreadDelta) uint64 {
	type sums struct{ ns, calls uint64 }
	var paths [256]sums
	for k, c := range th.Counters {
		if !k.Ctx.OnCPU() || !k.Path.IsSyscall() {
			continue
		}
		paths[k.Path].ns += c.NS
		paths[k.Path].calls += c.Calls
	}
	var longest uint64
	for _, p := range paths {
		if p.calls > 0 {
			longest = max(longest, p.ns/p.calls)
		}
	}
	return longest
}

// PrecisionBound is the allowed residual |measured - schedstat - terms| for
// a runtime.
func PrecisionBound(runtime uint64) uint64 {
	b := uint64(float64(runtime) * precisionPct / 100)
	if b < uint64(precisionFloor) {
		b = uint64(precisionFloor)
	}
	return b
}

// SchedstatResidual is how far a reported thread or process, as the kernel
// bills it (KernelViewNS), is from its schedstat delta, and the residual the
// self-check allows it: PrecisionBound plus the time around context switches
// the kernel did not report, whose split between this thread and another is
// unknown (switch_uncertain_ns).
func SchedstatResidual(c report.CPU) (diff, bound uint64) {
	kernelView := c.KernelViewNS()
	diff = max(kernelView, c.SchedstatNS) - min(kernelView, c.SchedstatNS)
	return diff, PrecisionBound(c.SchedstatNS) + c.SwitchUncertainNS
}

// KernelClock is what decides how the kernel's sum_exec_runtime differs
// from the on-CPU time zcprof measures.
type KernelClock struct {
	IRQTime bool // CONFIG_IRQ_TIME_ACCOUNTING: interrupt time left out
	Steal   bool // CONFIG_PARAVIRT_TIME_ACCOUNTING: stolen time left out
}

// HostClock reads KernelClock from the host facts.
func HostClock(h kernel.Host) KernelClock {
	return KernelClock{IRQTime: h.IRQTimeAccounting, Steal: h.StealTimeAccounting}
}

// threadCheck is one thread's comparison, term by term. All figures are
// signed ns of measured minus schedstat:
//
//	diff = boundary + irq + residual
//
// kernel_diff (per run, ours minus the kernel's run length, taxonomy.CtxKernelDiff)
// is boundary + irq + the steal inside the runs: the kernel's runs are
// lengths of rq->clock_task, which leaves out interrupt time with
// IRQ_TIME_ACCOUNTING and stolen time with PARAVIRT_TIME_ACCOUNTING.
type threadCheck struct {
	measured, runtime      uint64
	diff                   int64
	boundary, irq          int64
	residual               int64
	runs                   uint64
	residualBound          uint64
	boundaryBound          uint64
	residualOK, boundaryOK bool
}

func checkThread(th ThreadDelta, k KernelClock, stealBound uint64) threadCheck {
	c := threadCheck{measured: th.MeasuredNS(), runtime: th.Runtime}
	c.diff = int64(c.measured - c.runtime) // modular: signed
	kernelDiff := -th.BoundaryNS()
	for key, v := range th.Counters {
		if key.Ctx == taxonomy.CtxKernelDiff {
			c.runs += v.Calls
		}
	}
	if k.IRQTime {
		c.irq = int64(th.InterruptNS())
	}
	c.boundary = kernelDiff - c.irq
	c.residual = c.diff - kernelDiff
	// Around context switches the kernel did not report, the split
	// between two threads is unknown: the residual may be off by that much.
	c.residualBound = PrecisionBound(c.runtime) + th.UncertainNS()
	// With the residual's floor: a thread that ran a few times may
	// have been billed one long tail.
	c.boundaryBound = max(c.runs*max(uint64(boundaryPerRun), callLength(th)), uint64(precisionFloor)) + stealBound
	c.residualOK = abs64(c.residual) <= c.residualBound
	c.boundaryOK = abs64(c.boundary) <= c.boundaryBound
	return c
}

// CheckPrecision compares each thread's measured on-CPU time with its
// schedstat delta as they are, explains the difference term by term
// (wakeup-preemption billing at the boundaries, interrupt time the kernel
// leaves out, steal time), bounds each term, and returns the summary and
// one warning per thread outside a bound. The terms are measured per run
// (taxonomy.CtxKernelDiff), so the residual catches time zcprof lost or charged to
// the wrong thread, and the boundary bound catches a cut placed far from
// the kernel's.
func CheckPrecision(iv Interval, k KernelClock) (report.Precision, []string) {
	p := report.Precision{
		Bound: fmt.Sprintf("residual %.0f%% or %v per thread, whichever is larger; boundary term %v per run (the thread's longest mean syscall if longer) or %v",
			precisionPct, precisionFloor, boundaryPerRun, precisionFloor),
		ClampedRuns: iv.ClampedRuns,
	}
	var warnings []string
	if iv.DurationNS < uint64(precisionMinIv) {
		p.Unchecked = len(iv.Threads)
		return p, nil
	}
	// Steal is known per host only: each thread's boundary term may hold
	// up to all of it.
	var stealBound uint64
	if k.Steal {
		stealBound = iv.StealNS
		p.Terms.StealBoundNS = stealBound
	}
	for _, th := range iv.Threads {
		if !th.RuntimeKnown || th.RuntimeApprox {
			p.Unchecked++
			continue
		}
		p.Checked++
		c := checkThread(th, k, stealBound)
		p.MeasuredNS += c.measured
		p.SchedstatNS += c.runtime
		p.DiffNS += c.diff
		p.Terms.BoundaryNS += c.boundary
		p.Terms.BoundaryBoundNS += c.boundaryBound - stealBound
		p.Terms.IRQTimeNS += c.irq
		p.Terms.Runs += c.runs
		p.Terms.SwitchUncertainNS += th.UncertainNS()
		p.ResidualNS += c.residual
		if c.runtime > 0 {
			p.MaxDiffPct = max(p.MaxDiffPct, 100*float64(abs64(c.diff))/float64(c.runtime))
			p.MaxErrPct = max(p.MaxErrPct, 100*float64(abs64(c.residual))/float64(c.runtime))
		}
		who := fmt.Sprintf("thread %d (%s): measured %s, schedstat %s", th.Info.TID, th.Info.Comm, report.Duration(int64(c.measured)), report.Duration(int64(c.runtime)))
		if !c.residualOK {
			warnings = append(warnings, fmt.Sprintf("%s: %s unexplained after the boundary (%s) and interrupt (%s) terms, more than %s: zcprof lost time or charged it to another thread",
				who, report.Duration(c.residual), report.Duration(c.boundary), report.Duration(c.irq), report.Duration(int64(c.residualBound))))
		}
		if !c.boundaryOK {
			warnings = append(warnings, fmt.Sprintf("%s: its runs differ from the kernel's by %s in all (%d runs, interrupt time %s taken out), more than %s: a cut is far from where the kernel ends runs",
				who, report.Duration(c.boundary), c.runs, report.Duration(c.irq), report.Duration(int64(c.boundaryBound))))
		}
		if !c.residualOK || !c.boundaryOK {
			p.Failed++
		}
	}
	if iv.ClampedRuns > 0 {
		warnings = append(warnings, fmt.Sprintf("%d runs differed from the kernel's by more than 100 ms and were left out of the boundary term: their difference is in the residual", iv.ClampedRuns))
	}
	return p, warnings
}

func abs64(v int64) uint64 {
	if v < 0 {
		return uint64(-v)
	}
	return uint64(v)
}
