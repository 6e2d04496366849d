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
	s.CI = tQuantile(1-(1-level)/2, len(xs)-1) * s.SD / math.Sqrt(float64(len(xs)))
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

// tQuantile is the p-quantile (0.5 < p < 1) of Student's t distribution
// with df degrees of freedom, by bisection on its CDF.
func tQuantile(p float64, df int) float64 {
	lo, hi := 0.0, 1.0
	for tCDF(hi, df) < p {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if tCDF(mid, df) < p {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo < 1e-12*hi {
			break
		}
	}
	return (lo + hi) / 2
}

// tCDF is P(T <= t) for t >= 0: 1 - I_x(df/2, 1/2)/2 with x = df/(df+t²).
func tCDF(t float64, df int) float64 {
	v := float64(df)
	return 1 - 0.5*stats.BetaInc(v/2, 0.5, v/(v+t*t))
}
