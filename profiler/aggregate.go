package profiler

import (
	"sort"

	"github.com/zcprof/zcprof/profiler/report"
)

const mib = 1 << 20

// Totals is the per-context sum of a group of threads.
type Totals struct {
	Counters map[PathCtx]Counter
	Runtime  uint64 // schedstat delta of the threads whose baseline is known
	Utime    uint64
	Stime    uint64
}

// Sum adds up thread deltas; unresolved time (pathUnknown) is kept under
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

var softirqCtxs = []Ctx{CtxSoftirqNetRx, CtxSoftirqNetTx, CtxSoftirqOther}

// Entry turns totals into the CPU split and path list of the report.
func (t Totals) Entry() (report.CPU, []report.Path) {
	counters := map[PathCtx]Counter{}
	var unresolved uint64
	var boundary int64
	var uncertain uint64
	for k, c := range t.Counters {
		if k.Ctx == CtxKernelDiff {
			boundary -= int64(c.NS) // modular sum of signed per-run differences
			continue
		}
		if k.Ctx == CtxSwitchUncertain {
			uncertain += c.NS
			continue
		}
		if k.Path == pathUnknown {
			// Never crossed a boundary: kernel or user cannot be told,
			// so it goes to "other" and is flagged.
			unresolved += c.NS
			k.Path = PathOther
		}
		counters[k] = counters[k].add(c)
	}
	cpu := report.CPU{SchedstatNS: t.Runtime, TimesUserNS: t.Utime, TimesSystemNS: t.Stime,
		UnresolvedNS: unresolved, SchedstatBoundaryNS: boundary, SwitchUncertainNS: uncertain}
	var paths []report.Path
	for _, p := range append([]Path{PathUser}, SyscallPaths...) {
		task := counters[PathCtx{p, CtxTask}]
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
		rp.HardirqNS = counters[PathCtx{p, CtxHardirq}].NS
		if rp.Calls > 0 {
			rp.NSPerCall = float64(rp.CPUNS) / float64(rp.Calls)
		}
		if rp.Bytes >= 64<<10 { // below that, a per-MiB figure is noise
			rp.NSPerMiB = float64(rp.CPUNS) / (float64(rp.Bytes) / mib)
		}
		if p == PathUser {
			cpu.UserNS = task.NS
		} else {
			cpu.KernelNS += task.NS
		}
		if rp.Calls > 0 || rp.CPUNS > 0 || rp.SoftirqNS > 0 || rp.HardirqNS > 0 {
			paths = append(paths, rp)
		}
	}
	for _, ctx := range append(softirqCtxs, CtxHardirq) {
		var c Counter
		for k, v := range counters {
			if k.Ctx == ctx {
				c = c.add(v)
			}
		}
		switch ctx {
		case CtxSoftirqNetRx:
			cpu.SoftirqNetRxNS = c.NS
		case CtxSoftirqNetTx:
			cpu.SoftirqNetTxNS = c.NS
		case CtxSoftirqOther:
			cpu.SoftirqOtherNS = c.NS
		case CtxHardirq:
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

// Processes groups an interval's threads by process.
func Processes(iv Interval, withThreads bool) []report.Process {
	byPid := map[int][]ThreadDelta{}
	for _, th := range iv.Threads {
		byPid[th.Info.TGID] = append(byPid[th.Info.TGID], th)
	}
	var out []report.Process
	for pid, threads := range byPid {
		p := ProcessEntry(pid, threads, withThreads)
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CPU.OnCPUNS != out[j].CPU.OnCPUNS {
			return out[i].CPU.OnCPUNS > out[j].CPU.OnCPUNS
		}
		return out[i].PID < out[j].PID
	})
	return out
}

// ProcessEntry builds one report entry from a group of threads.
func ProcessEntry(pid int, threads []ThreadDelta, withThreads bool) report.Process {
	cpu, paths := Sum(threads).Entry()
	p := report.Process{PID: pid, Comm: processComm(pid, threads), CPU: cpu, Paths: paths}
	p.Zerocopy = ZerocopyFor(threads)
	annotatePaths(p.Paths, threads)
	if withThreads {
		for _, th := range threads {
			tc, tp := Sum([]ThreadDelta{th}).Entry()
			annotatePaths(tp, []ThreadDelta{th})
			p.Threads = append(p.Threads, report.Thread{TID: th.Info.TID, Comm: th.Info.Comm, CPU: tc, Paths: tp})
		}
	}
	return p
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
	for _, p := range []Path{PathSysIdle, PathSysKsoftirqd, PathSysOtherTask} {
		rp := report.Path{Path: p.String(), Categories: []report.Category{}}
		for _, ctx := range append(softirqCtxs, CtxHardirq) {
			c := iv.System[PathCtx{p, ctx}]
			if c.NS == 0 {
				continue
			}
			rp.Calls += c.Calls
			if ctx == CtxHardirq {
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
				case CtxSoftirqNetRx:
					cpu.SoftirqNetRxNS += c.NS
				case CtxSoftirqNetTx:
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
	return &report.System{Paths: paths, CPU: cpu}
}
