package exact

import (
	"fmt"
	"math"

	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/report"
)

// copyInside says which copy routine does the copy inside an exact caller
// and which category that copy is. When the routine is not attached (all
// distro kernels), the caller's self time is split by the
// sampled share of its stacks that are in the copy.
var copyInside = []struct {
	caller, routine uint8
	category        string
}{
	{FuncTCPSendmsgLocked, FuncCopyFromIter, attrib.CopyTx},
}

// Share is, among the samples of one accounting key that fell in a
// caller's own time (inside it, not inside a traced callee), how many were
// in the copy.
type Share struct {
	Copy, Total uint64
}

// KeyInput is what the split of one accounting key (generation, path,
// context) needs.
type KeyInput struct {
	// TotalNS is the accounting's exact time of the key over the interval;
	// 0 when unknown (then no remainder is reported).
	TotalNS uint64
	// Stats are the traced functions' figures for the key, by function id.
	Stats map[uint8]Stat
	// Attached reports whether a function is traced at all.
	Attached func(id uint8) bool
	// Shares are the sampled copy shares by caller id (copyInside); absent
	// when no sampler runs.
	Shares map[uint8]Share
}

// part is one contribution to a category.
type part struct {
	ns, ci uint64
	exact  bool
	source string
}

// Split attributes one key's time to categories, in report order:
// each traced function's self time goes to its category (exact); a
// caller whose copy routine could not be traced is split by the sampled
// copy share (estimate, 95% Wilson interval); the rest of the key's time,
// outside every traced function, is "other" (exact).
func Split(in KeyInput) []report.Category { return merge(split(in)) }

// Sources says how each category of a split was obtained, in words.
func Sources(in KeyInput) map[string][]string {
	out := map[string][]string{}
	for name, ps := range split(in) {
		for _, p := range ps {
			out[name] = append(out[name], p.source)
		}
	}
	return out
}

func split(in KeyInput) map[string][]part {
	parts := map[string][]part{}
	var traced uint64
	for _, f := range Functions {
		s, ok := in.Stats[f.ID]
		if !ok || s.Calls == 0 && s.NS == 0 {
			continue
		}
		self := s.SelfNS()
		traced += self
		if rule, ok := copyCaller(f.ID, in.Attached); ok {
			parts = splitCaller(parts, f, rule, self, in.Shares)
			continue
		}
		parts[f.Category] = append(parts[f.Category], part{ns: self, exact: true,
			source: fmt.Sprintf("%s self time (%d calls)", f.Name, s.Calls)})
	}
	if in.TotalNS > traced {
		parts[attrib.Other] = append(parts[attrib.Other], part{ns: in.TotalNS - traced, exact: true,
			source: "time outside the traced functions"})
	}
	return parts
}

// copyCaller returns the copyInside rule of a caller whose copy routine
// is not traced.
func copyCaller(id uint8, attached func(uint8) bool) (int, bool) {
	for i, c := range copyInside {
		if c.caller == id && (attached == nil || !attached(c.routine)) {
			return i, true
		}
	}
	return 0, false
}

func splitCaller(parts map[string][]part, f Function, rule int, self uint64, shares map[uint8]Share) map[string][]part {
	c := copyInside[rule]
	routine, _ := ByID(c.routine)
	sh, ok := shares[f.ID]
	if !ok || sh.Total == 0 {
		// No sampler, or no sample in it: the copy stays inside.
		parts[f.Category] = append(parts[f.Category], part{ns: self, exact: true,
			source: fmt.Sprintf("%s self time, %s included (not traceable here; no sampled share)", f.Name, routine.Name)})
		return parts
	}
	w := attrib.Wilson(sh.Copy, sh.Total) // the sampling backend's interval
	copyNS := uint64(math.Round(float64(self) * w.P))
	ci := uint64(math.Round(float64(self) * w.HalfWidth()))
	how := fmt.Sprintf("%s exact self time x sampled share %d/%d (%s not traceable here)", f.Name, sh.Copy, sh.Total, routine.Name)
	parts[c.category] = append(parts[c.category], part{ns: copyNS, ci: ci, source: how})
	parts[f.Category] = append(parts[f.Category], part{ns: self - copyNS, ci: ci, source: how})
	return parts
}

// merge sums the parts of each category: an estimate anywhere makes the
// category an estimate; intervals add (the parts of one key share their
// sampling error).
func merge(parts map[string][]part) []report.Category {
	var out []report.Category
	for _, name := range attrib.CategoryNames {
		ps := parts[name]
		if len(ps) == 0 {
			continue
		}
		c := report.Category{Category: name, Exact: true}
		for _, p := range ps {
			c.CPUNS += p.ns
			c.CI95NS += p.ci
			c.Exact = c.Exact && p.exact
		}
		out = append(out, c)
	}
	return out
}
