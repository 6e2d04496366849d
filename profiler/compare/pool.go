package compare

import (
	"math"

	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/stats"
)

// fileEntities flattens a side: its one document, or the cells (processes)
// of its documents pooled by name, each figure's repeats taken together as
// if one run had made them all.
func fileEntities(f File) []*entity {
	if len(f.Docs) == 1 {
		return entities(f.Docs[0])
	}
	var names []string
	byName := map[string][]*entity{}
	for _, d := range f.Docs {
		for _, e := range entities(d) {
			if byName[e.name] == nil {
				names = append(names, e.name)
			}
			byName[e.name] = append(byName[e.name], e)
		}
	}
	out := make([]*entity, 0, len(names))
	for _, n := range names {
		out = append(out, pool(byName[n]))
	}
	return out
}

// pool is one entity of several documents' runs. A figure a document's
// entity lacks was 0 in its runs (a path not taken). A figure has a
// spread only where every part knows its own: summarized over repeats, or
// a single run; otherwise (a category of --repeat runs, kept as a mean
// only) the pool has its mean alone.
func pool(es []*entity) *entity {
	if len(es) == 1 {
		return es[0]
	}
	out := newEntity(es[0].name, 0, map[string]report.Stat{})
	for _, e := range es {
		out.repeats += e.repeats
		for _, k := range e.keys {
			if _, ok := out.vals[k]; !ok {
				out.add(k, e.labels[k], e.units[k], 0)
			}
		}
	}
	for _, k := range out.keys {
		groups := make([]stats.Group, 0, len(es))
		spread, level := true, 0.0
		var ci2 float64 // the sampled estimates' own intervals, weighted
		for _, e := range es {
			g := stats.Group{N: e.repeats, Mean: e.vals[k]}
			if s, ok := e.stats[k]; ok && s.N > 1 {
				g = stats.Group{N: s.N, Mean: s.Mean, SD: s.SD}
				level = s.Level
			} else if e.repeats > 1 {
				spread = false
			}
			ci2 += math.Pow(float64(g.N)*e.ci95[k], 2)
			groups = append(groups, g)
		}
		p := stats.Pool(groups)
		out.vals[k] = p.Mean
		if ci2 > 0 {
			out.ci95[k] = math.Sqrt(ci2) / float64(p.N)
		}
		if spread && p.N > 1 {
			if level == 0 {
				level = 0.95
			}
			out.stats[k] = report.Stat{N: p.N, Mean: p.Mean, SD: p.SD, Level: level,
				CI: stats.TQuantile(1-(1-level)/2, p.N-1) * p.SD / math.Sqrt(float64(p.N))}
		}
	}
	return out
}
