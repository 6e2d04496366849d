// Package compare compares zcprof documents (the library behind `zcprof
// compare`, and the HTML report's comparison): it matches the cells (run) or
// processes (profile) of zcprof documents and says, figure by figure, how
// much each changed and whether the change is significant over the
// repeats (Welch's t-test), in the spirit of benchstat.
package compare

import (
	"fmt"

	"github.com/zcprof/zcprof/profiler/report"
)

// DefaultAlpha is the significance level.
const DefaultAlpha = 0.05

// File is one side of a comparison and the name it was given by: one
// document, or several of one configuration whose cells are pooled (runs
// made in turn with the other side's, so that a drift of the machine hits
// both sides alike).
type File struct {
	Name string
	Docs []*report.Document
}

// Compare compares base with each other file. It fails (one line) when a
// document has nothing in common with the base or the two are of
// different commands.
func Compare(base File, others []File, alpha float64) (*Result, error) {
	if alpha <= 0 || alpha >= 1 {
		return nil, fmt.Errorf("--alpha %v: must be between 0 and 1", alpha)
	}
	r := &Result{Schema: Schema, Test: TestName, Alpha: alpha}
	for _, o := range others {
		if base.Docs[0].Command != o.Docs[0].Command {
			return nil, fmt.Errorf("%s is a %q document and %s a %q one: nothing in common to compare", base.Name, base.Docs[0].Command, o.Name, o.Docs[0].Command)
		}
		c, err := compareDocs(base, o, alpha)
		if err != nil {
			return nil, err
		}
		r.Comparisons = append(r.Comparisons, c)
	}
	return r, nil
}

func compareDocs(base, other File, alpha float64) (Comparison, error) {
	c := Comparison{Base: base.Name, New: other.Name}
	be, ne := fileEntities(base), fileEntities(other)
	byName := map[string]*entity{}
	for _, e := range ne {
		byName[e.name] = e
	}
	matched := map[string]bool{}
	for _, b := range be {
		if n, ok := byName[b.name]; ok {
			c.Pairs = append(c.Pairs, pair(b, n, alpha))
			matched[b.name] = true
		}
	}
	// Two documents of one cell (or process) each are compared with each
	// other whatever their names: write against sendfile, nginx against
	// a patched nginx.
	if len(c.Pairs) == 0 && len(be) == 1 && len(ne) == 1 {
		c.Pairs = append(c.Pairs, pair(be[0], ne[0], alpha))
		return c, nil
	}
	if len(c.Pairs) == 0 {
		return c, fmt.Errorf("%s and %s have no cell or process in common to compare", base.Name, other.Name)
	}
	for _, b := range be {
		if !matched[b.name] {
			c.OnlyBase = append(c.OnlyBase, b.name)
		}
	}
	for _, n := range ne {
		if !matched[n.name] {
			c.OnlyNew = append(c.OnlyNew, n.name)
		}
	}
	return c, nil
}

// pair compares two entities figure by figure: the base's figures in
// order, then those only the new one has. Figures zero on both sides are
// left out.
func pair(b, n *entity, alpha float64) Pair {
	p := Pair{Base: b.name, New: n.name}
	keys := append([]string{}, b.keys...)
	for _, k := range n.keys {
		if _, ok := b.vals[k]; !ok {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		bs, ns := b.summary(k), n.summary(k)
		if bs.Mean == 0 && ns.Mean == 0 {
			continue
		}
		label, unit := b.labels[k], b.units[k]
		if label == "" {
			label, unit = n.labels[k], n.units[k]
		}
		row := Row{Figure: k, Label: label, Unit: unit, Base: bs, New: ns}
		if bs.Present && ns.Present && bs.Mean != 0 {
			d := 100 * (ns.Mean - bs.Mean) / bs.Mean
			row.DeltaPct = &d
		}
		// A path one side never took is a change, but there is no
		// spread to test it against.
		if bs.Present && ns.Present {
			if pv, _, ok := welchOf(b, n, k); ok {
				row.Testable, row.P, row.Significant = true, pv, pv < alpha
			}
		}
		p.Rows = append(p.Rows, row)
	}
	return p
}

func welchOf(b, n *entity, key string) (float64, float64, bool) {
	bs, ok1 := b.stats[key]
	ns, ok2 := n.stats[key]
	if !ok1 || !ok2 {
		return 0, 0, false
	}
	return Welch(bs.N, bs.Mean, bs.SD, ns.N, ns.Mean, ns.SD)
}
