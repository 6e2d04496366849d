package profiler

import (
	"fmt"
	"time"

	"github.com/zcprof/zcprof/profiler/report"
)

// Precision bounds of the self-check (issue #2, DESIGN.md): the parts must
// add up to sum_exec_runtime within 1% or 2 ms, whichever is larger, for
// intervals of at least a second.
const (
	precisionPct   = 1.0
	precisionFloor = 2 * time.Millisecond
	precisionMinIv = time.Second
)

// PrecisionBound is the allowed |measured - schedstat| for a runtime.
func PrecisionBound(runtime uint64) uint64 {
	b := uint64(float64(runtime) * precisionPct / 100)
	if b < uint64(precisionFloor) {
		b = uint64(precisionFloor)
	}
	return b
}

// CheckPrecision compares each thread's measured on-CPU time with its
// schedstat delta and returns the summary and one warning per failure.
// With CONFIG_IRQ_TIME_ACCOUNTING the kernel leaves interrupt time out of
// sum_exec_runtime, so it is left out of the comparison too.
func CheckPrecision(iv Interval, irqTime bool) (report.Precision, []string) {
	p := report.Precision{Bound: fmt.Sprintf("%.0f%% or %v per thread, whichever is larger", precisionPct, precisionFloor)}
	var warnings []string
	if iv.DurationNS < uint64(precisionMinIv) {
		p.Unchecked = len(iv.Threads)
		return p, nil
	}
	for _, th := range iv.Threads {
		if !th.RuntimeKnown || th.RuntimeApprox {
			p.Unchecked++
			continue
		}
		p.Checked++
		// Compare like with like: the kernel's view of the same run,
		// boundary billing included.
		measured := uint64(int64(th.MeasuredNS()) + th.BoundaryNS())
		if irqTime {
			measured -= th.InterruptNS()
		}
		diff := absDiff(measured, th.Runtime)
		if th.Runtime > 0 {
			if pct := 100 * float64(diff) / float64(th.Runtime); pct > p.MaxErrPct {
				p.MaxErrPct = pct
			}
		}
		// Around context switches the kernel did not report, the split
		// between two threads is unknown: widen the bound by that much.
		if diff > PrecisionBound(th.Runtime)+th.UncertainNS() {
			p.Failed++
			warnings = append(warnings, fmt.Sprintf("thread %d (%s): measured %s of on-CPU time but schedstat says %s (off by %s, more than %s)",
				th.Info.TID, th.Info.Comm, fmtNS(measured), fmtNS(th.Runtime), fmtNS(diff), fmtNS(PrecisionBound(th.Runtime))))
		}
	}
	return p, warnings
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

func fmtNS(ns uint64) string {
	return time.Duration(ns).Round(time.Microsecond).String()
}
