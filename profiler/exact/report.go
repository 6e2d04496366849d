package exact

import (
	"sort"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

var (
	_ attrib.Annotator      = (*Backend)(nil)
	_ attrib.EntryAnnotator = (*Backend)(nil)
)

// AnnotateDocument implements attrib.Annotator: every path of the
// document's processes, threads and system row gets the traced functions
// of its keys, with their exact calls, time and bytes.
func (b *Backend) AnnotateDocument(d *report.Document, iv profiler.Interval, prev, cur attrib.Reading) {
	if fx, ok := between(prev, cur); ok {
		FillFunctions(d, iv, fx)
	}
}

// between is the function deltas of two readings (prev nil: since start).
func between(prev, cur attrib.Reading) (*Snapshot, bool) {
	c, ok := cur.(*Reading)
	if !ok || c == nil {
		return nil, false
	}
	var prevFX *Snapshot
	if p, ok := prev.(*Reading); ok && p != nil {
		prevFX = p.FX
	}
	return Delta(prevFX, c.FX), true
}

// AnnotateEntry fills the functions of one entry (a `run` side) and its
// threads from the readings around its interval.
func (b *Backend) AnnotateEntry(p *report.Process, threads []profiler.ThreadDelta, prev, cur attrib.Reading) {
	fx, ok := between(prev, cur)
	if !ok {
		return
	}
	var gens []uint32
	for _, th := range threads {
		gens = append(gens, th.Info.Gen)
	}
	fillPaths(p.Paths, fx, gens)
	for j := range p.Threads {
		for _, th := range threads {
			if th.Info.TID == p.Threads[j].TID {
				fillPaths(p.Threads[j].Paths, fx, []uint32{th.Info.Gen})
			}
		}
	}
}

// FillFunctions sets report.Path.Functions from function deltas.
func FillFunctions(d *report.Document, iv profiler.Interval, fx *Snapshot) {
	genOf := map[int]uint32{} // tid -> generation
	for _, th := range iv.Threads {
		genOf[th.Info.TID] = th.Info.Gen
	}
	for i := range d.Processes {
		p := &d.Processes[i]
		fillPaths(p.Paths, fx, p.Gens)
		for j := range p.Threads {
			if gen, ok := genOf[p.Threads[j].TID]; ok {
				fillPaths(p.Threads[j].Paths, fx, []uint32{gen})
			}
		}
	}
	if d.System != nil {
		byPath := map[string]map[uint8]Stat{}
		for k, s := range fx.Stats {
			if k.Gen == 0 {
				addTo(byPath, k.Path.String(), k.Func, s)
			}
		}
		for i := range d.System.Paths {
			d.System.Paths[i].Functions = functions(byPath[d.System.Paths[i].Path])
		}
	}
}

// fillPaths gives each path the functions of the generations' keys that
// the report shows under it: a syscall path for task context, the context
// itself (softirq.net_rx, ...) for interrupt time, as the categories are.
func fillPaths(paths []report.Path, fx *Snapshot, gens []uint32) {
	want := map[uint32]bool{}
	for _, g := range gens {
		want[g] = true
	}
	byPath := map[string]map[uint8]Stat{}
	for k, s := range fx.Stats {
		if want[k.Gen] {
			addTo(byPath, reportPath(k.Key), k.Func, s)
		}
	}
	for i := range paths {
		paths[i].Functions = functions(byPath[paths[i].Path])
	}
}

func addTo(m map[string]map[uint8]Stat, path string, id uint8, s Stat) {
	if m[path] == nil {
		m[path] = map[uint8]Stat{}
	}
	m[path][id] = m[path][id].add(s)
}

// reportPath mirrors where the report lists a key's time (attrib's rule).
func reportPath(k profiler.Key) string {
	if k.Ctx != taxonomy.CtxTask {
		return k.Ctx.String()
	}
	if k.Path.String() == "unknown" {
		return taxonomy.PathOther.String()
	}
	return k.Path.String()
}

// functions turns one path's stats into report entries, largest first.
func functions(stats map[uint8]Stat) []report.Function {
	var out []report.Function
	for id, s := range stats {
		f, ok := ByID(id)
		if !ok || s.Calls == 0 {
			continue
		}
		out = append(out, report.Function{Function: f.Name, Calls: s.Calls, NS: s.NS, SelfNS: s.SelfNS(),
			Bytes: s.Bytes, NSPerCall: float64(s.NS) / float64(s.Calls)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].NS != out[j].NS {
			return out[i].NS > out[j].NS
		}
		return out[i].Function < out[j].Function
	})
	return out
}
