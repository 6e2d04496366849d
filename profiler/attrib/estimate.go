package attrib

import (
	"math"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/report"
)

// z95 is the two-sided 95% normal quantile.
const z95 = 1.959963984540054

// Share is k of n samples with its 95% Wilson score interval [Lo, Hi].
type Share struct {
	K, N   uint64
	P      float64 // k/n
	Lo, Hi float64
}

// Wilson returns k/n with its 95% Wilson score interval. Unlike the normal
// approximation it stays inside [0, 1] and is not zero-width at k = 0 or
// k = n, which matters for small categories (copy.tx under sendfile).
func Wilson(k, n uint64) Share {
	if n == 0 {
		return Share{Lo: 0, Hi: 1}
	}
	fn := float64(n)
	p := float64(k) / fn
	z2 := z95 * z95
	den := 1 + z2/fn
	center := (p + z2/(2*fn)) / den
	half := z95 * math.Sqrt(p*(1-p)/fn+z2/(4*fn*fn)) / den
	return Share{K: k, N: n, P: p, Lo: math.Max(0, center-half), Hi: math.Min(1, center+half)}
}

// HalfWidth is half the interval's width: the ± reported beside the
// point estimate.
func (s Share) HalfWidth() float64 { return (s.Hi - s.Lo) / 2 }

// Counts is the number of samples per category of one context.
type Counts map[string]uint64

// CategoriesOf scales exact context time by the sample shares: category
// CPU = exactNS x k/n, CI95 = exactNS x the Wilson half-width. Categories
// are in report order; those without samples are left out.
func CategoriesOf(exactNS uint64, counts Counts) []report.Category {
	var n uint64
	for _, k := range counts {
		n += k
	}
	if exactNS == 0 {
		return nil
	}
	if n == 0 {
		// Too short to be sampled: the split is unknown. Shown as
		// "other" with an interval covering all of it, so that the
		// categories still add up to the path's time.
		return []report.Category{{Category: Other, CPUNS: exactNS, CI95NS: exactNS}}
	}
	var out []report.Category
	for _, name := range CategoryNames {
		k := counts[name]
		if k == 0 {
			continue
		}
		s := Wilson(k, n)
		out = append(out, report.Category{
			Category: name,
			CPUNS:    uint64(math.Round(float64(exactNS) * s.P)),
			CI95NS:   uint64(math.Round(float64(exactNS) * s.HalfWidth())),
			Exact:    false,
		})
	}
	return out
}

// ByContext classifies samples per accounting key.
func ByContext(s *Samples, classify func(string) string) map[profiler.Key]Counts {
	out := map[profiler.Key]Counts{}
	for k, n := range s.Counts {
		c := out[k.Key]
		if c == nil {
			c = Counts{}
			out[k.Key] = c
		}
		c[classify(k.Stack)] += n
	}
	return out
}

// Estimate turns an interval and the samples taken during it into
// categories per key. User-mode time is not split (it is not kernel work);
// every other context with both exact time and samples is.
func Estimate(iv profiler.Interval, s *Samples) map[profiler.Key][]report.Category {
	counts := ByContext(s, Classify)
	out := map[profiler.Key][]report.Category{}
	exact := func(k profiler.Key, ns uint64) {
		if k.Path == profiler.PathUser && k.Ctx == profiler.CtxTask {
			return
		}
		if cats := CategoriesOf(ns, counts[k]); len(cats) > 0 {
			out[k] = cats
		}
	}
	for _, th := range iv.Threads {
		for pc, c := range th.Counters {
			if pc.Ctx.OnCPU() {
				exact(profiler.Key{Gen: th.Info.Gen, Path: pc.Path, Ctx: pc.Ctx}, c.NS)
			}
		}
	}
	for pc, c := range iv.System {
		if pc.Ctx.OnCPU() {
			exact(profiler.Key{Gen: 0, Path: pc.Path, Ctx: pc.Ctx}, c.NS)
		}
	}
	return out
}

// Categories implements Backend.
func (s *Sampler) Categories(iv profiler.Interval, prev, cur Reading) map[profiler.Key][]report.Category {
	c, ok := cur.(*Samples)
	if !ok || c == nil {
		return nil
	}
	p, _ := prev.(*Samples)
	return Estimate(iv, c.Sub(p))
}
