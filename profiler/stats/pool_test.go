package stats

import (
	"math"
	"testing"
)

// Pooling groups gives what the values together give.
func TestPoolMatchesAllValues(t *testing.T) {
	summary := func(xs ...float64) Group {
		g := Group{N: len(xs)}
		for _, x := range xs {
			g.Mean += x
		}
		g.Mean /= float64(len(xs))
		if len(xs) > 1 {
			var ss float64
			for _, x := range xs {
				ss += (x - g.Mean) * (x - g.Mean)
			}
			g.SD = math.Sqrt(ss / float64(len(xs)-1))
		}
		return g
	}
	got := Pool([]Group{summary(10, 12, 14), summary(30), summary(3, 5)})
	want := summary(10, 12, 14, 30, 3, 5)
	if got.N != want.N || math.Abs(got.Mean-want.Mean) > 1e-12 || math.Abs(got.SD-want.SD) > 1e-12 {
		t.Errorf("Pool = %+v, want %+v", got, want)
	}
	if one := Pool([]Group{{N: 1, Mean: 7}}); one != (Group{N: 1, Mean: 7}) {
		t.Errorf("one value: %+v", one)
	}
	if none := Pool(nil); none != (Group{}) {
		t.Errorf("no group: %+v", none)
	}
}
