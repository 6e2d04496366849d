package stats

import (
	"math"
	"testing"
)

// Reference quantiles from the standard t table.
func TestTQuantile(t *testing.T) {
	for _, c := range []struct {
		p    float64
		df   int
		want float64
	}{
		{0.975, 1, 12.7062}, {0.975, 2, 4.3027}, {0.975, 4, 2.7764}, {0.975, 9, 2.2622},
		{0.975, 29, 2.0452}, {0.975, 1000, 1.9623}, {0.995, 4, 4.6041}, {0.95, 10, 1.8125},
		{0.995, 1, 63.6567},
	} {
		if got := TQuantile(c.p, c.df); math.Abs(got-c.want) > 5e-4 {
			t.Errorf("t(%v, %d) = %.5f, want %.4f", c.p, c.df, got, c.want)
		}
	}
}
