package run

import (
	"math"
	"reflect"
	"sort"

	"github.com/zcprof/zcprof/profiler/report"
)

// meanCell averages the runs of one cell, figure by figure, and redoes
// what is derived from the figures (service demand, verdicts).
func meanCell(samples []report.Cell) report.Cell {
	c := samples[len(samples)-1]
	if len(samples) == 1 {
		return c
	}
	var snd, rcv []report.Process
	var tput []float64
	var ws []report.Workload
	for _, s := range samples {
		snd = append(snd, s.Sender)
		rcv = append(rcv, s.Receiver)
		tput = append(tput, s.ThroughputBps)
		ws = append(ws, *s.Workload)
	}
	c.Repeats = len(samples)
	c.ThroughputBps = summarize(tput, 0).Mean
	c.Sender = meanProcess(snd)
	c.Receiver = meanProcess(rcv)
	w := meanOf(ws)
	c.Workload = &w
	applyFacts(&c)
	return c
}

func meanProcess(ps []report.Process) report.Process {
	p := ps[len(ps)-1]
	var cpus []report.CPU
	var paths [][]report.Path
	var zcs []report.Zerocopy
	var owners []report.SoftirqOwner
	for _, q := range ps {
		cpus = append(cpus, q.CPU)
		paths = append(paths, q.Paths)
		if q.Zerocopy != nil {
			zcs = append(zcs, *q.Zerocopy)
		}
		if q.SoftirqOwner != nil {
			owners = append(owners, *q.SoftirqOwner)
		}
	}
	p.CPU = meanOf(cpus)
	p.Paths = meanPaths(paths)
	if len(zcs) == len(ps) {
		zc := meanOf(zcs)
		p.Zerocopy = &zc
	}
	if len(owners) == len(ps) {
		so := meanOf(owners)
		p.SoftirqOwner = &so
	}
	p.Threads = nil
	// Threads of different runs are different threads; the same position
	// (role and stream) is the same job.
	for i := range ps[len(ps)-1].Threads {
		var tc []report.CPU
		var tp [][]report.Path
		for _, q := range ps {
			if i < len(q.Threads) {
				tc = append(tc, q.Threads[i].CPU)
				tp = append(tp, q.Threads[i].Paths)
			}
		}
		th := ps[len(ps)-1].Threads[i]
		th.CPU, th.Paths = meanOf(tc), meanPaths(tp)
		p.Threads = append(p.Threads, th)
	}
	return p
}

// meanPaths averages paths by name; a path missing from a run counts as
// zero there.
func meanPaths(runs [][]report.Path) []report.Path {
	var order []string
	byName := map[string][]report.Path{}
	for _, paths := range runs {
		for _, p := range paths {
			if _, ok := byName[p.Path]; !ok {
				order = append(order, p.Path)
			}
			byName[p.Path] = append(byName[p.Path], p)
		}
	}
	out := []report.Path{}
	for _, name := range order {
		ps := byName[name]
		for len(ps) < len(runs) {
			ps = append(ps, report.Path{Path: name})
		}
		m := meanOf(ps)
		m.Path = name
		m.Softirq = nil
		for _, p := range ps {
			for k, v := range p.Softirq {
				if m.Softirq == nil {
					m.Softirq = map[string]uint64{}
				}
				m.Softirq[k] += v
			}
		}
		for k, v := range m.Softirq {
			m.Softirq[k] = uint64(math.Round(float64(v) / float64(len(ps))))
		}
		m.Categories = meanCategories(ps)
		m.Functions = meanFunctions(ps)
		m.NSPerCall, m.NSPerMiB = 0, 0
		if m.Calls > 0 {
			m.NSPerCall = float64(m.CPUNS) / float64(m.Calls)
		}
		m.NSPerMiB = report.PerMiB(m.CPUNS, m.Bytes)
		out = append(out, m)
	}
	return out
}

// meanCategories averages each category over the runs (absent = 0). The
// runs' samples are independent, so the mean's 95% half-width is the
// quadrature sum of theirs over n; a mean is exact only if every run's is.
func meanCategories(ps []report.Path) []report.Category {
	type acc struct {
		ns, varNS float64
		exact     bool
	}
	var order []string
	by := map[string]*acc{}
	for _, p := range ps {
		for _, c := range p.Categories {
			a := by[c.Category]
			if a == nil {
				a = &acc{exact: true}
				by[c.Category] = a
				order = append(order, c.Category)
			}
			a.ns += float64(c.CPUNS)
			a.varNS += float64(c.CI95NS) * float64(c.CI95NS)
			a.exact = a.exact && c.Exact
		}
	}
	n := float64(len(ps))
	out := []report.Category{}
	for _, name := range order {
		a := by[name]
		out = append(out, report.Category{Category: name, CPUNS: uint64(math.Round(a.ns / n)),
			CI95NS: uint64(math.Round(math.Sqrt(a.varNS) / n)), Exact: a.exact})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].CPUNS > out[j].CPUNS })
	return out
}

// meanFunctions averages each traced function's figures over the runs
// (absent = 0), largest first.
func meanFunctions(ps []report.Path) []report.Function {
	var order []string
	by := map[string][]report.Function{}
	for _, p := range ps {
		for _, f := range p.Functions {
			if _, ok := by[f.Function]; !ok {
				order = append(order, f.Function)
			}
			by[f.Function] = append(by[f.Function], f)
		}
	}
	var out []report.Function
	for _, name := range order {
		fs := by[name]
		for len(fs) < len(ps) {
			fs = append(fs, report.Function{Function: name})
		}
		m := meanOf(fs)
		m.Function, m.NSPerCall = name, 0
		if m.Calls > 0 {
			m.NSPerCall = float64(m.NS) / float64(m.Calls)
		}
		out = append(out, m)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].NS > out[j].NS })
	return out
}

// meanOf averages every integer and float field of a flat struct; other
// fields (strings, flags, maps, slices) are taken from the last element.
func meanOf[T any](xs []T) T {
	var out T
	if len(xs) == 0 {
		return out
	}
	out = xs[len(xs)-1]
	ov := reflect.ValueOf(&out).Elem()
	n := float64(len(xs))
	for i := range ov.NumField() {
		f := ov.Field(i)
		if !f.CanSet() {
			continue
		}
		var sum float64
		for _, x := range xs {
			v := reflect.ValueOf(x).Field(i)
			switch v.Kind() {
			case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				sum += float64(v.Uint())
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				sum += float64(v.Int())
			case reflect.Float32, reflect.Float64:
				sum += v.Float()
			}
		}
		switch f.Kind() {
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(uint64(math.Round(sum / n)))
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(int64(math.Round(sum / n)))
		case reflect.Float32, reflect.Float64:
			f.SetFloat(sum / n)
		}
	}
	return out
}

// figures are the per-run values whose mean and interval --repeat reports.
func figures(c report.Cell) map[string]float64 {
	out := map[string]float64{"throughput_bps": c.ThroughputBps}
	for _, side := range c.Sides() {
		cpu := side.Process.CPU
		for k, v := range map[string]uint64{
			"on_cpu_ns": cpu.OnCPUNS, "user_ns": cpu.UserNS, "kernel_ns": cpu.KernelNS,
			"softirq_ns": cpu.SoftirqNS, "softirq_net_rx_ns": cpu.SoftirqNetRxNS, "hardirq_ns": cpu.HardirqNS,
			"schedstat_ns": cpu.SchedstatNS, "times_user_ns": cpu.TimesUserNS, "times_system_ns": cpu.TimesSystemNS,
		} {
			out[side.Name+"."+k] = float64(v)
		}
		if so := side.Process.SoftirqOwner; so != nil {
			out[side.Name+".softirq_for_own_ns"] = float64(so.ForOwnNS)
			out[side.Name+".softirq_for_peer_ns"] = float64(so.ForPeerNS)
		}
		out[side.Name+".ns_per_mib"] = side.NSPerMiB
		// Per path too, so that zcprof compare can test each path's
		// change over the repeats (a path absent from a run is 0 there).
		for _, p := range side.Process.Paths {
			out[side.Name+".path."+p.Path+".cpu_ns"] = float64(p.CPUNS)
		}
	}
	return out
}

// stopFigures are the figures --ci must pin down (netperf: throughput and
// both CPUs).
var stopFigures = []string{"throughput_bps", "sender.on_cpu_ns", "receiver.on_cpu_ns"}

// cellStats summarizes every figure over the runs.
func cellStats(samples []report.Cell, level float64) map[string]report.Stat {
	vals := map[string][]float64{}
	for i, s := range samples {
		for k, v := range figures(s) {
			for len(vals[k]) < i {
				vals[k] = append(vals[k], 0) // a path this run did not take
			}
			vals[k] = append(vals[k], v)
		}
	}
	for k := range vals {
		for len(vals[k]) < len(samples) {
			vals[k] = append(vals[k], 0)
		}
	}
	out := map[string]report.Stat{}
	for k, xs := range vals {
		out[k] = summarize(xs, level)
	}
	return out
}
