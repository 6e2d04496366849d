package profiler

import (
	"sort"

	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// Totals is the per-context sum of a group of threads.
type Totals struct {
	Counters map[PathCtx]Counter
	Runtime  uint64 // schedstat delta of the threads whose baseline is known
	Utime    uint64
	Stime    uint64
}

// Sum adds up thread deltas; unresolved time (taxonomy.PathUnknown) is kept under
// its own key for Entry to fold.
func Sum(threads []ThreadDelta) Totals {
	t := Totals{Counters: map[PathCtx]Counter{}}
	for _, th := range threads {
		for k, c := range th.Counters {
			t.Counters[k] = t.Counters[k].add(c)
		}
		if th.RuntimeKnown {
			t.Runtime += th.Runtime
		}
		t.Utime += th.Utime
		t.Stime += th.Stime
	}
	return t
}

var softirqCtxs = []taxonomy.Ctx{taxonomy.CtxSoftirqNetRx, taxonomy.CtxSoftirqNetTx, taxonomy.CtxSoftirqOther}

// Entry turns totals into the CPU split and path list of the report.
func (t Totals) Entry() (report.CPU, []report.Path) {
	counters := map[PathCtx]Counter{}
	var unresolved uint64
	var boundary int64
	var uncertain uint64
	var probe Counter
	for k, c := range t.Counters {
		if k.Ctx == taxonomy.CtxKernelDiff {
			boundary -= int64(c.NS) // modular sum of signed per-run differences
			continue
		}
		if k.Ctx == taxonomy.CtxSwitchUncertain {
			uncertain += c.NS
			continue
		}
		if k.Ctx == taxonomy.CtxProbe {
			probe = probe.add(c)
			continue
		}
		if k.Path == taxonomy.PathUnknown {
			// Never crossed a boundary: kernel or user cannot be told,
			// so it goes to "other" and is flagged.
			unresolved += c.NS
			k.Path = taxonomy.PathOther
		}
		counters[k] = counters[k].add(c)
	}
	cpu := report.CPU{SchedstatNS: t.Runtime, TimesUserNS: t.Utime, TimesSystemNS: t.Stime,
		UnresolvedNS: unresolved, SchedstatBoundaryNS: boundary, SwitchUncertainNS: uncertain,
		ProbeNS: probe.NS, ProbeEvents: probe.Calls}
	var paths []report.Path
	for _, p := range append([]taxonomy.Path{taxonomy.PathUser}, taxonomy.SyscallPaths...) {
		task := counters[PathCtx{p, taxonomy.CtxTask}]
		rp := report.Path{Path: p.String(), Calls: task.Calls, Bytes: task.Bytes, CPUNS: task.NS, Categories: []report.Category{}}
		for _, ctx := range softirqCtxs {
			if ns := counters[PathCtx{p, ctx}].NS; ns > 0 {
				if rp.Softirq == nil {
					rp.Softirq = map[string]uint64{}
				}
				rp.Softirq[ctx.String()] = ns
				rp.SoftirqNS += ns
			}
		}
		rp.HardirqNS = counters[PathCtx{p, taxonomy.CtxHardirq}].NS
		if rp.Calls > 0 {
			rp.NSPerCall = float64(rp.CPUNS) / float64(rp.Calls)
		}
		if rp.Bytes >= 64<<10 { // below that, a per-MiB figure is noise
			rp.NSPerMiB = report.PerMiB(rp.CPUNS, rp.Bytes)
		}
		if p == taxonomy.PathUser {
			cpu.UserNS = task.NS
		} else {
			cpu.KernelNS += task.NS
		}
		if rp.Calls > 0 || rp.CPUNS > 0 || rp.SoftirqNS > 0 || rp.HardirqNS > 0 {
			paths = append(paths, rp)
		}
	}
	for _, ctx := range append(softirqCtxs, taxonomy.CtxHardirq) {
		var c Counter
		for k, v := range counters {
			if k.Ctx == ctx {
				c = c.add(v)
			}
		}
		switch ctx {
		case taxonomy.CtxSoftirqNetRx:
			cpu.SoftirqNetRxNS = c.NS
		case taxonomy.CtxSoftirqNetTx:
			cpu.SoftirqNetTxNS = c.NS
		case taxonomy.CtxSoftirqOther:
			cpu.SoftirqOtherNS = c.NS
		case taxonomy.CtxHardirq:
			cpu.HardirqNS = c.NS
		}
		if ctx.IsSoftirq() {
			cpu.SoftirqNS += c.NS
		}
		if c.NS > 0 {
			paths = append(paths, report.Path{Path: ctx.String(), Calls: c.Calls, CPUNS: c.NS, Categories: []report.Category{}})
		}
	}
	cpu.OnCPUNS = cpu.UserNS + cpu.KernelNS + cpu.SoftirqNS + cpu.HardirqNS
	return cpu, paths
}

// Processes groups an interval's threads by process: by pid and leader
// start, as a pid is reused (a thread whose process start is unknown, one
// registered from user space, goes with its pid's earliest process, the
// one that ran when it was registered); each fold row of exited threads
// (retire.go) is an entry of its own.
func Processes(iv Interval, withThreads bool) []report.Process {
	type process struct {
		tgid  int
		start uint64
		fold  uint32
	}
	earliest := map[int]uint64{}
	for _, th := range iv.Threads {
		if s := th.Info.ProcStartNS; s != 0 && (earliest[th.Info.TGID] == 0 || s < earliest[th.Info.TGID]) {
			earliest[th.Info.TGID] = s
		}
	}
	byProcess := map[process][]ThreadDelta{}
	for _, th := range iv.Threads {
		p := process{tgid: th.Info.TGID, start: th.Info.ProcStartNS}
		switch {
		case th.Info.isFoldRow():
			p = process{fold: th.Info.Gen}
		case p.start == 0:
			p.start = earliest[p.tgid]
		}
		byProcess[p] = append(byProcess[p], th)
	}
	var out []report.Process
	for p, threads := range byProcess {
		e := ProcessEntry(p.tgid, threads, withThreads)
		if p.fold != 0 {
			e.ExitedProcesses = threads[0].Info.Processes
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CPU.OnCPUNS != out[j].CPU.OnCPUNS {
			return out[i].CPU.OnCPUNS > out[j].CPU.OnCPUNS
		}
		if out[i].PID != out[j].PID {
			return out[i].PID < out[j].PID
		}
		return out[i].Comm < out[j].Comm // fold rows: pid 0, one per name
	})
	return out
}

// ProcessEntry builds one report entry from a group of threads.
func ProcessEntry(pid int, threads []ThreadDelta, withThreads bool) report.Process {
	cpu, paths := Sum(threads).Entry()
	p := report.Process{PID: pid, Comm: processComm(pid, threads), CPU: cpu, Paths: paths}
	for _, th := range threads {
		p.Gens = append(p.Gens, th.Info.Gen)
	}
	p.Zerocopy = ZerocopyFor(threads)
	byteclass.Annotate(p.Paths, byteClassesOf(threads))
	if withThreads {
		for _, th := range threads {
			tc, tp := Sum([]ThreadDelta{th}).Entry()
			byteclass.Annotate(tp, byteClassesOf([]ThreadDelta{th}))
			p.Threads = append(p.Threads, report.Thread{TID: th.Info.TID, Comm: th.Info.Comm, CPU: tc, Paths: tp})
		}
	}
	return p
}

// ZerocopyFor is the zero-copy object of a group of threads (a process, or
// one side of a run cell), from their byte classes and paths
// (byteclass.Zerocopy).
func ZerocopyFor(threads []ThreadDelta) *report.Zerocopy {
	_, paths := Sum(threads).Entry()
	return byteclass.Zerocopy(paths, byteClassesOf(threads))
}

// byteClassesOf is each thread's byte classes.
func byteClassesOf(threads []ThreadDelta) byteclass.Threads {
	out := byteclass.Threads{Maps: make([]map[byteclass.PathClass]byteclass.Count, len(threads))}
	for i, th := range threads {
		out.Maps[i] = th.ByteClasses
		out.Classified = out.Classified || th.Classified
	}
	return out
}

// processComm prefers the leader's name; threads may have renamed themselves.
func processComm(pid int, threads []ThreadDelta) string {
	for _, th := range threads {
		if th.Info.TID == pid {
			return th.Info.Comm
		}
	}
	if len(threads) > 0 {
		return threads[0].Info.Comm
	}
	return ""
}

// SystemRow reports interrupt time that ran outside the targets.
func SystemRow(iv Interval) *report.System {
	if len(iv.System) == 0 {
		return nil
	}
	cpu, _ := Totals{Counters: map[PathCtx]Counter{}}.Entry()
	var paths []report.Path
	for _, p := range []taxonomy.Path{taxonomy.PathSysIdle, taxonomy.PathSysKsoftirqd, taxonomy.PathSysOtherTask} {
		rp := report.Path{Path: p.String(), Categories: []report.Category{}}
		for _, ctx := range append(softirqCtxs, taxonomy.CtxHardirq) {
			c := iv.System[PathCtx{p, ctx}]
			if c.NS == 0 {
				continue
			}
			rp.Calls += c.Calls
			if ctx == taxonomy.CtxHardirq {
				rp.HardirqNS += c.NS
				cpu.HardirqNS += c.NS
			} else {
				if rp.Softirq == nil {
					rp.Softirq = map[string]uint64{}
				}
				rp.Softirq[ctx.String()] += c.NS
				rp.SoftirqNS += c.NS
				cpu.SoftirqNS += c.NS
				switch ctx {
				case taxonomy.CtxSoftirqNetRx:
					cpu.SoftirqNetRxNS += c.NS
				case taxonomy.CtxSoftirqNetTx:
					cpu.SoftirqNetTxNS += c.NS
				default:
					cpu.SoftirqOtherNS += c.NS
				}
			}
		}
		if rp.SoftirqNS > 0 || rp.HardirqNS > 0 {
			paths = append(paths, rp)
		}
	}
	cpu.OnCPUNS = cpu.SoftirqNS + cpu.HardirqNS
	// zcprof's handlers that ran while no target was current (switches,
	// interrupts; other tasks' syscalls are not timed).
	for k, c := range iv.System {
		if k.Ctx == taxonomy.CtxProbe {
			cpu.ProbeNS += c.NS
			cpu.ProbeEvents += c.Calls
		}
	}
	return &report.System{Paths: paths, CPU: cpu}
}
