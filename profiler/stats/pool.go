package stats

import "math"

// Group is a sample summarized: its size, mean and sample standard
// deviation (0 for a single value).
type Group struct {
	N        int
	Mean, SD float64
}

// Pool is the summary of the union of groups, exactly as if computed from
// all their values: the mean weighted by size, and the sample variance
// from the within-group sums of squares plus each group's offset from the
// pooled mean.
func Pool(groups []Group) Group {
	var out Group
	var sum float64
	for _, g := range groups {
		out.N += g.N
		sum += float64(g.N) * g.Mean
	}
	if out.N == 0 {
		return out
	}
	out.Mean = sum / float64(out.N)
	if out.N < 2 {
		return out
	}
	var ss float64
	for _, g := range groups {
		d := g.Mean - out.Mean
		ss += float64(g.N-1)*g.SD*g.SD + float64(g.N)*d*d
	}
	out.SD = math.Sqrt(ss / float64(out.N-1))
	return out
}
