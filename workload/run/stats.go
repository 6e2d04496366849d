package run

import (
	"math"

	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/stats"
)

// summarize returns the mean, sample standard deviation and the half-width
// of the two-sided confidence interval at level (e.g. 0.95) of the mean,
// from Student's t with n-1 degrees of freedom. One sample has no interval.
func summarize(xs []float64, level float64) report.Stat {
	s := report.Stat{N: len(xs), Level: level}
	if len(xs) == 0 {
		return s
	}
	for _, x := range xs {
		s.Mean += x
	}
	s.Mean /= float64(len(xs))
	if len(xs) < 2 {
		return s
	}
	var ss float64
	for _, x := range xs {
		ss += (x - s.Mean) * (x - s.Mean)
	}
	s.SD = math.Sqrt(ss / float64(len(xs)-1))
	s.CI = stats.TQuantile(1-(1-level)/2, len(xs)-1) * s.SD / math.Sqrt(float64(len(xs)))
	return s
}

// withinWidth is netperf's -I test: the whole interval (twice the
// half-width) is at most pct percent of the mean. A mean of zero (a figure
// that is always 0) is as precise as it gets.
func withinWidth(s report.Stat, pct float64) bool {
	if s.N < 2 {
		return false
	}
	if s.Mean == 0 {
		return s.SD == 0
	}
	return 2*s.CI <= pct/100*math.Abs(s.Mean)
}
