package compare

import (
	"math"
	"testing"
)

// Reference p-values by numeric integration of Student's t density
// (Simpson, 200000 steps) at the Welch t and df of each case.
func TestWelchMatchesR(t *testing.T) {
	for _, c := range []struct {
		n1         int
		m1, sd1    float64
		n2         int
		m2, sd2    float64
		wantP, wdf float64
	}{
		// x=c(1,2,3,4,5), y=c(2,4,6,8,10): t=-1.8974, df=5.882, p=0.107531
		{5, 3, math.Sqrt(2.5), 5, 6, math.Sqrt(10), 0.107531, 5.882},
		// x=c(10,11,12), y=c(20,21,22,23): t=-12.12, df=4.959, p=7.1145e-05
		{3, 11, 1, 4, 21.5, math.Sqrt(5.0 / 3), 7.1145e-05, 4.959},
	} {
		p, df, ok := Welch(c.n1, c.m1, c.sd1, c.n2, c.m2, c.sd2)
		if !ok || math.Abs(p-c.wantP) > 1e-3*c.wantP || math.Abs(df-c.wdf) > 0.01 {
			t.Errorf("%+v: p=%.4g df=%.3f ok=%v", c, p, df, ok)
		}
	}
	if _, _, ok := Welch(1, 1, 0, 5, 1, 1); ok {
		t.Error("one run cannot be tested")
	}
	if p, _, _ := Welch(3, 5, 0, 3, 5, 0); p != 1 {
		t.Errorf("identical constants: p=%v", p)
	}
}
