package attrib

import (
	"math"
	"slices"
	"sort"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// unknownPath is the accounting's "not yet resolved" path, which the report
// folds into "other" (profiler/aggregate.go).
const unknownPath = "unknown"

// reportPath names the report path a key's time is shown under: the path
// itself for task context, the context for softirq and hardirq time (the
// report lists those as their own paths).
func reportPath(k profiler.Key) string {
	if k.Ctx != taxonomy.CtxTask {
		return k.Ctx.String()
	}
	if k.Path.String() == unknownPath {
		return taxonomy.PathOther.String()
	}
	return k.Path.String()
}

// merge adds categories of several keys: estimates add up, intervals add
// in quadrature (the keys' samples are independent). A sum is exact only
// if every part is (function-exact backends give exact categories).
type merged map[string]*mergedCat

type mergedCat struct {
	ns, varNS float64
	estimate  bool
}

func (m merged) add(cats []report.Category) {
	for _, c := range cats {
		e := m[c.Category]
		if e == nil {
			e = &mergedCat{}
			m[c.Category] = e
		}
		e.ns += float64(c.CPUNS)
		e.varNS += float64(c.CI95NS) * float64(c.CI95NS)
		e.estimate = e.estimate || !c.Exact
	}
}

func (m merged) categories() []report.Category {
	out := []report.Category{}
	for _, name := range CategoryNames {
		if e := m[name]; e != nil {
			out = append(out, report.Category{Category: name, CPUNS: uint64(math.Round(e.ns)),
				CI95NS: uint64(math.Round(math.Sqrt(e.varNS))), Exact: !e.estimate})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CPUNS > out[j].CPUNS })
	return out
}

// FillPaths sets the categories of an entry's paths (as built by
// profiler.Sum(threads).Entry()) from the estimates of those threads' keys.
func FillPaths(paths []report.Path, threads []profiler.ThreadDelta, cats map[profiler.Key][]report.Category) {
	gens := map[uint32]bool{}
	for _, th := range threads {
		gens[th.Info.Gen] = true
	}
	byPath := map[string]merged{}
	for k, c := range cats {
		if !gens[k.Gen] {
			continue
		}
		name := reportPath(k)
		if byPath[name] == nil {
			byPath[name] = merged{}
		}
		byPath[name].add(c)
	}
	for i := range paths {
		if m := byPath[paths[i].Path]; m != nil {
			paths[i].Categories = m.categories()
		}
	}
}

// FillEntry fills an entry built by profiler.ProcessEntry(pid, threads, ...)
// and its per-thread entries: a process of `profile`, or the sender or
// receiver of a `run` cell (called with that side's threads).
func FillEntry(p *report.Process, threads []profiler.ThreadDelta, cats map[profiler.Key][]report.Category) {
	FillPaths(p.Paths, threads, cats)
	for j := range p.Threads {
		for _, th := range threads {
			if th.Info.TID == p.Threads[j].TID {
				FillPaths(p.Threads[j].Paths, []profiler.ThreadDelta{th}, cats)
			}
		}
	}
}

// FillProcesses fills every process (and its threads) of a `profile`
// document built from iv.
func FillProcesses(procs []report.Process, iv profiler.Interval, cats map[profiler.Key][]report.Category) {
	byGen := map[uint32]profiler.ThreadDelta{}
	for _, th := range iv.Threads {
		byGen[th.Info.Gen] = th
	}
	for i := range procs {
		var threads []profiler.ThreadDelta
		for _, gen := range procs[i].Gens {
			threads = append(threads, byGen[gen])
		}
		FillEntry(&procs[i], threads, cats)
	}
}

// FillSystem fills the system row: softirq and hardirq time that ran in
// the idle task, ksoftirqd or other tasks.
func FillSystem(sys *report.System, cats map[profiler.Key][]report.Category) {
	if sys == nil {
		return
	}
	byPath := map[string]merged{}
	for k, c := range cats {
		if k.Gen != 0 {
			continue
		}
		name := k.Path.String()
		if byPath[name] == nil {
			byPath[name] = merged{}
		}
		byPath[name].add(c)
	}
	for i := range sys.Paths {
		if m := byPath[sys.Paths[i].Path]; m != nil {
			sys.Paths[i].Categories = m.categories()
		}
	}
}

// Annotate records the backend in a document: backends.attribution, what
// it could not provide in backends.unavailable, a warning when many of the
// samples between prev and cur came early, and the backend's own warnings.
func Annotate(d *report.Document, b Backend, prev, cur Reading) {
	warnEarly(d, prev, cur)
	if w, ok := b.(Warner); ok {
		for _, s := range w.Warnings(prev, cur) {
			if !slices.Contains(d.Warnings, s) {
				d.Warnings = append(d.Warnings, s)
			}
		}
	}
	d.Backends.Attribution = b.Name()
	if s, ok := b.(*Sampler); ok {
		d.Backends.SampleHz = s.hz
		d.Overhead.SampleDispatchNS = s.dispatchNS
	}
	delete(d.Backends.Unavailable, "attribution")
	for k, v := range b.Unavailable() {
		d.Backends.Unavailable[k] = v
	}
}
