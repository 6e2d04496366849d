package compare

import (
	"math"

	"github.com/zcprof/zcprof/profiler/stats"
)

// Welch is Welch's unequal-variances t-test of two means from their sample
// sizes, means and standard deviations: what `zcprof run --repeat N` keeps
// per figure (stats), so no raw values are needed. It returns the
// two-sided p-value and the Welch–Satterthwaite degrees of freedom.
// ok is false when either side has fewer than two runs.
func Welch(n1 int, m1, sd1 float64, n2 int, m2, sd2 float64) (p, df float64, ok bool) {
	if n1 < 2 || n2 < 2 {
		return 0, 0, false
	}
	v1, v2 := sd1*sd1/float64(n1), sd2*sd2/float64(n2)
	se := math.Sqrt(v1 + v2)
	if se == 0 {
		// Both constant: equal means are the same, different ones are
		// as different as it gets.
		if m1 == m2 {
			return 1, float64(n1 + n2 - 2), true
		}
		return 0, float64(n1 + n2 - 2), true
	}
	t := math.Abs(m1-m2) / se
	df = (v1 + v2) * (v1 + v2) / (v1*v1/float64(n1-1) + v2*v2/float64(n2-1))
	// P(|T| > t) = I_{df/(df+t²)}(df/2, 1/2).
	return stats.BetaInc(df/2, 0.5, df/(df+t*t)), df, true
}
