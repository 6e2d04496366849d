package run

import (
	"math"
	"testing"

	"github.com/zcprof/zcprof/profiler/report"
)

func TestSummarize(t *testing.T) {
	s := summarize([]float64{10, 12, 14, 16, 18}, 0.95)
	// mean 14, sd sqrt(10), half-width 2.7764*sqrt(10)/sqrt(5) = 3.9264
	if s.N != 5 || s.Mean != 14 || math.Abs(s.SD-math.Sqrt(10)) > 1e-12 || math.Abs(s.CI-3.9264) > 1e-3 {
		t.Errorf("summarize = %+v", s)
	}
	if one := summarize([]float64{7}, 0.95); one.Mean != 7 || one.CI != 0 || one.N != 1 {
		t.Errorf("one sample: %+v", one)
	}
	if none := summarize(nil, 0.95); none.N != 0 || none.Mean != 0 {
		t.Errorf("no sample: %+v", none)
	}
}

// netperf -I 95,5: the whole interval must be at most 5% of the mean wide.
func TestWithinWidth(t *testing.T) {
	for _, c := range []struct {
		s    report.Stat
		pct  float64
		want bool
	}{
		{report.Stat{N: 5, Mean: 100, CI: 2.5}, 5, true},
		{report.Stat{N: 5, Mean: 100, CI: 2.6}, 5, false},
		{report.Stat{N: 5, Mean: -100, CI: 2}, 5, true},
		{report.Stat{N: 1, Mean: 100}, 5, false},
		{report.Stat{N: 3, Mean: 0, SD: 0}, 5, true},
		{report.Stat{N: 3, Mean: 0, SD: 1, CI: 1}, 5, false},
	} {
		if got := withinWidth(c.s, c.pct); got != c.want {
			t.Errorf("withinWidth(%+v, %v) = %v", c.s, c.pct, got)
		}
	}
}
