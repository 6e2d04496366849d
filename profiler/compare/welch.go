package compare

import "math"

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
	return betaInc(df/2, 0.5, df/(df+t*t)), df, true
}

// betaInc is the regularized incomplete beta function I_x(a, b) by its
// continued fraction (modified Lentz), with I_x(a,b) = 1 - I_{1-x}(b,a)
// where the fraction converges slowly.
func betaInc(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log(1-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		for _, num := range []float64{
			fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm)),
			-(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1)),
		} {
			d = 1 + num*d
			if math.Abs(d) < tiny {
				d = tiny
			}
			c = 1 + num/c
			if math.Abs(c) < tiny {
				c = tiny
			}
			d = 1 / d
			h *= d * c
		}
		if math.Abs(d*c-1) < 1e-15 {
			break
		}
	}
	return h
}
