package compare

import (
	"fmt"

	"github.com/zcprof/zcprof/profiler/report"
)

// entity is one cell or process flattened into figures.
type entity struct {
	name    string
	keys    []string // in display order
	labels  map[string]string
	units   map[string]string
	vals    map[string]float64
	stats   map[string]report.Stat
	ci95    map[string]float64 // estimates' own interval (sampled categories)
	repeats int
}

func newEntity(name string, repeats int, stats map[string]report.Stat) *entity {
	return &entity{name: name, labels: map[string]string{}, units: map[string]string{},
		vals: map[string]float64{}, stats: stats, ci95: map[string]float64{}, repeats: repeats}
}

func (e *entity) add(key, label, unit string, v float64) {
	if _, ok := e.vals[key]; !ok {
		e.keys = append(e.keys, key)
	}
	e.labels[key], e.units[key], e.vals[key] = label, unit, v
}

// CellName names a cell as the tables do.
func CellName(c report.Cell) string {
	name := fmt.Sprintf("%s→%s %s ×%d", c.Method, c.RxMethod, report.SizeString(c.Size), c.Streams)
	if c.Topology != "" && c.Topology != "loopback" {
		name += " " + c.Topology
	}
	return name
}

func cellEntity(c report.Cell) *entity {
	e := newEntity(CellName(c), c.Repeats, c.Stats)
	e.add("throughput_bps", "throughput", "bps", c.ThroughputBps)
	for _, side := range c.Sides() {
		e.add(side.Name+".ns_per_mib", side.Name+" CPU/MiB", "ns/MiB", side.NSPerMiB)
		processFigures(e, side.Name+".", side.Name+" ", side.Process)
	}
	return e
}

func processEntity(p report.Process) *entity {
	e := newEntity(p.Comm, 1, nil)
	processFigures(e, "", "", p)
	return e
}

// processFigures adds an entry's CPU by context, each path's CPU and each
// path's categories.
func processFigures(e *entity, key, label string, p report.Process) {
	c := p.CPU
	e.add(key+"on_cpu_ns", label+"CPU", "ns", float64(c.OnCPUNS))
	e.add(key+"kernel_ns", label+"syscall", "ns", float64(c.KernelNS))
	e.add(key+"softirq_ns", label+"softirq", "ns", float64(c.SoftirqNS))
	e.add(key+"user_ns", label+"user", "ns", float64(c.UserNS))
	for _, path := range p.Paths {
		if path.Path == "user" {
			continue // the same time as user_ns above
		}
		pk := key + "path." + path.Path + ".cpu_ns"
		e.add(pk, label+path.Path, "ns", float64(path.CPUNS))
	}
	for _, path := range p.Paths {
		for _, cat := range path.Categories {
			ck := key + "path." + path.Path + ".cat." + cat.Category + ".cpu_ns"
			e.add(ck, label+path.Path+" "+cat.Category, "ns", float64(cat.CPUNS))
			e.ci95[ck] = float64(cat.CI95NS)
		}
	}
}

// entities flattens a document: its cells, or else its processes.
func entities(d *report.Document) []*entity {
	var out []*entity
	for _, c := range d.Cells {
		out = append(out, cellEntity(c))
	}
	if len(out) > 0 {
		return out
	}
	seen := map[string]bool{}
	for _, p := range d.Processes {
		if seen[p.Comm] {
			continue // matched by name: the first (largest) of a name
		}
		seen[p.Comm] = true
		out = append(out, processEntity(p))
	}
	return out
}

// summary is one side of a row.
func (e *entity) summary(key string) Summary {
	v, ok := e.vals[key]
	if !ok {
		return Summary{}
	}
	if s, ok := e.stats[key]; ok && s.N > 1 {
		return Summary{Present: true, N: s.N, Mean: s.Mean, SD: s.SD, CI: s.CI, Level: s.Level}
	}
	s := Summary{Present: true, N: e.repeats, Mean: v}
	if ci, ok := e.ci95[key]; ok {
		s.CI, s.Level = ci, 0.95
	}
	return s
}
