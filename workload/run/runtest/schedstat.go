// Package runtest holds the checks the tests of `zcprof run` share, local
// and two-host.
package runtest

import (
	"testing"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/testenv"
)

// AssertSchedstat: a side's exact on-CPU time, as the kernel bills it
// (schedstat_boundary_ns), equals the sum of its threads' schedstat deltas
// within the self-check's residual bound: 1% or 2 ms, plus the time around
// context switches sched_switch did not report (switch_uncertain_ns), whose
// split between this thread and another is unknown. So does each thread's.
// In a two-host run each side is held to its own host's kernel.
func AssertSchedstat(t testing.TB, side string, p report.Process) {
	t.Helper()
	check := func(who string, c report.CPU) {
		if c.UserNS+c.KernelNS+c.SoftirqNS+c.HardirqNS != c.OnCPUNS {
			t.Errorf("%s: parts do not add up: %+v", who, c)
		}
		if c.SchedstatNS > 0 && !testenv.PrecisionChecked(c.SchedstatNS) {
			return
		}
		diff, bound := profiler.SchedstatResidual(c)
		if c.SchedstatNS == 0 || diff > bound+testenv.PrecisionSlack(c.SchedstatNS) {
			t.Errorf("%s: on-CPU %d ns (%+d boundary, %d probe, %d switch-uncertain, %d unresolved) vs schedstat %d ns: off by %d ns",
				who, c.OnCPUNS, c.SchedstatBoundaryNS, c.ProbeNS, c.SwitchUncertainNS, c.UnresolvedNS, c.SchedstatNS, diff)
		}
	}
	check(side, p.CPU)
	for _, th := range p.Threads {
		check(side+" thread "+th.Comm, th.CPU)
	}
}
