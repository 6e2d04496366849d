package stats

// TQuantile is the p-quantile (0.5 < p < 1) of Student's t distribution
// with df degrees of freedom, by bisection on its CDF.
func TQuantile(p float64, df int) float64 {
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
	return 1 - 0.5*BetaInc(v/2, 0.5, v/(v+t*t))
}
