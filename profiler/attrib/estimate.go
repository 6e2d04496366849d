package attrib

import (
	"math"
	"strings"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/taxonomy"
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
	s := wilson(float64(k)/float64(n), float64(n))
	s.K, s.N = k, n
	return s
}

// wilson is the Wilson score interval of a share p estimated with the
// precision of n independent samples (n may be an effective sample size).
func wilson(p, n float64) Share {
	z2 := z95 * z95
	den := 1 + z2/n
	center := (p + z2/(2*n)) / den
	half := z95 * math.Sqrt(p*(1-p)/n+z2/(4*n*n)) / den
	return Share{P: p, Lo: math.Max(0, center-half), Hi: math.Min(1, center+half)}
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
	shares := map[string]shareEstimate{}
	for name, k := range counts {
		p := float64(k) / float64(n)
		shares[name] = shareEstimate{p: p, variance: p * (1 - p) / float64(n)}
	}
	return categoriesFrom(exactNS, shares, float64(n))
}

// shareEstimate is a category's estimated share of a context's samples and
// the variance of that estimate.
type shareEstimate struct{ p, variance float64 }

// categoriesFrom scales exact context time by estimated shares (n: the
// samples behind them). The interval is Wilson's at the effective sample
// size p(1-p)/variance, which is n for a simple sample.
func categoriesFrom(exactNS uint64, shares map[string]shareEstimate, n float64) []report.Category {
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
		e, ok := shares[name]
		if !ok || e.p <= 0 {
			continue
		}
		neff := n
		if e.variance > 0 && e.p < 1 {
			neff = math.Min(n, e.p*(1-e.p)/e.variance)
		}
		out = append(out, report.Category{
			Category: name,
			CPUNS:    uint64(math.Round(float64(exactNS) * e.p)),
			CI95NS:   uint64(math.Round(float64(exactNS) * wilson(e.p, neff).HalfWidth())),
		})
	}
	return out
}

// twoPhase estimates a context's category shares from the leaves of all
// its samples (phase one) and the unwound random subsample (phase two):
// double sampling for stratification, with the leaf function as stratum
// (Cochran, Sampling Techniques, 12.2). A leaf's category mix comes from
// its unwound samples in this context, else from pooled (the leaf's mix in
// similar contexts: small contexts, such as a sender's NET_RX, have few
// unwound samples), else from classifying the leaf alone. The variance is
// p(1-p)/n1 + W (1/n2 - 1/n1), W the mean within-leaf variance: where the
// leaf decides the category (W = 0), the estimate is as good as if every
// sample had been unwound.
func twoPhase(leaves, stacks map[string]uint64, classify func(string) string, pooled func(leaf string) Counts) (map[string]shareEstimate, float64) {
	var n1, n2 float64
	for _, n := range leaves {
		n1 += float64(n)
	}
	byLeaf := leafMixes(stacks, classify)
	for _, n := range stacks {
		n2 += float64(n)
	}
	p, within := map[string]float64{}, map[string]float64{}
	for leaf, n := range leaves {
		w := float64(n) / n1
		mix := byLeaf[leaf]
		if len(mix) == 0 && pooled != nil {
			mix = pooled(leaf)
		}
		var m float64
		for _, k := range mix {
			m += float64(k)
		}
		if m == 0 {
			p[classify(leaf)] += w
			continue
		}
		for c, k := range mix {
			q := float64(k) / m
			p[c] += w * q
			within[c] += w * q * (1 - q)
		}
	}
	out := map[string]shareEstimate{}
	for c, pc := range p {
		v := pc * (1 - pc) / n1
		if n2 < n1 {
			v += within[c] * (1/math.Max(n2, 1) - 1/n1)
		}
		out[c] = shareEstimate{p: pc, variance: v}
	}
	return out, n1
}

// leafMixes classifies unwound stacks and groups them by leaf.
func leafMixes(stacks map[string]uint64, classify func(string) string) map[string]Counts {
	out := map[string]Counts{}
	for st, n := range stacks {
		leaf := st[strings.LastIndexByte(st, ';')+1:]
		if out[leaf] == nil {
			out[leaf] = Counts{}
		}
		out[leaf][classify(st)] += n
	}
	return out
}

// pools are the leaves' category mixes over all threads: per (path,
// context), and per context alone, for contexts too small to have unwound
// a leaf themselves.
type pools struct {
	byPathCtx map[[2]uint8]map[string]Counts
	byCtx     map[uint8]map[string]Counts
}

func newPools(ctxs map[profiler.Key]*contextSamples, classify func(string) string) *pools {
	p := &pools{byPathCtx: map[[2]uint8]map[string]Counts{}, byCtx: map[uint8]map[string]Counts{}}
	add := func(m map[string]Counts, leaf string, mix Counts) {
		if m[leaf] == nil {
			m[leaf] = Counts{}
		}
		for c, n := range mix {
			m[leaf][c] += n
		}
	}
	for k, c := range ctxs {
		pc, cx := [2]uint8{uint8(k.Path), uint8(k.Ctx)}, uint8(k.Ctx)
		if p.byPathCtx[pc] == nil {
			p.byPathCtx[pc] = map[string]Counts{}
		}
		if p.byCtx[cx] == nil {
			p.byCtx[cx] = map[string]Counts{}
		}
		for leaf, mix := range leafMixes(c.stacks, classify) {
			add(p.byPathCtx[pc], leaf, mix)
			add(p.byCtx[cx], leaf, mix)
		}
	}
	return p
}

// mix returns the pooled mix of a leaf for key k (nil if never unwound).
func (p *pools) mix(k profiler.Key) func(string) Counts {
	return func(leaf string) Counts {
		if m := p.byPathCtx[[2]uint8{uint8(k.Path), uint8(k.Ctx)}][leaf]; len(m) > 0 {
			return m
		}
		return p.byCtx[uint8(k.Ctx)][leaf]
	}
}

// contextSamples are one context's phase-one leaves and phase-two stacks.
type contextSamples struct{ leaves, stacks map[string]uint64 }

// byKey groups a reading by accounting key. A reading without leaves (every
// sample unwound) takes each stack's innermost frame as its leaf.
func byKey(s *Samples) map[profiler.Key]*contextSamples {
	out := map[profiler.Key]*contextSamples{}
	get := func(k profiler.Key) *contextSamples {
		c := out[k]
		if c == nil {
			c = &contextSamples{leaves: map[string]uint64{}, stacks: map[string]uint64{}}
			out[k] = c
		}
		return c
	}
	for k, n := range s.Leaves {
		get(k.Key).leaves[k.Leaf] += n
	}
	for k, n := range s.Counts {
		get(k.Key).stacks[k.Stack] += n
		if len(s.Leaves) == 0 {
			get(k.Key).leaves[k.Stack[strings.LastIndexByte(k.Stack, ';')+1:]] += n
		}
	}
	return out
}

// Estimate turns an interval and the samples taken during it into
// categories per key. User-mode time is not split (it is not kernel work);
// every other context with both exact time and samples is, by the shares
// of its samples that are not zcprof's own (own.go): those ran in time the
// context no longer holds.
func Estimate(iv profiler.Interval, s *Samples) map[profiler.Key][]report.Category {
	ctxs := byKey(s)
	pool := newPools(ctxs, classifyOwn)
	out := map[profiler.Key][]report.Category{}
	exact := func(k profiler.Key, ns uint64) {
		if k.Path == taxonomy.PathUser && k.Ctx == taxonomy.CtxTask {
			return
		}
		var shares map[string]shareEstimate
		var n float64
		if c := ctxs[k]; c != nil {
			shares, n = withoutOwn(twoPhase(c.leaves, c.stacks, classifyOwn, pool.mix(k)))
		}
		if cats := categoriesFrom(ns, shares, n); len(cats) > 0 {
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
