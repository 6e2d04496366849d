package profiler

import (
	"fmt"
	"os"

	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/report"
)

// NewDocument fills what every result shares: host, backends, overhead,
// the system row and the precision self-check. The overhead is zcprof's
// handler time in scope, the entries the document reports, relative to
// the same entries' CPU.
func (s *Session) NewDocument(command string, iv Interval, scope ...report.CPU) *report.Document {
	h := kernel.ReadHost()
	hostname, _ := os.Hostname()
	d := &report.Document{
		Schema:  report.Schema,
		Command: command,
		Host:    report.Host{Hostname: hostname, Kernel: h.Kernel, CPUs: h.CPUs, HZ: h.HZ, IRQTimeAccounting: h.IRQTimeAccounting, PreemptRT: h.PreemptRT},
		Backends: report.Backends{
			Accounting:  s.backend,
			Attribution: "",
			Unavailable: map[string]string{},
			ByteClasses: s.ByteClasses(),
			ProgramIDs:  s.ProgramIDs(),
			Mounted:     s.Mounted(),

			ByteClassesUnavailable: s.ByteClassSourcesUnavailable(),
		},
		DurationNS: iv.DurationNS,
		System:     SystemRow(iv),
	}
	for k, v := range s.unavailable {
		d.Backends.Unavailable[k] = v
	}
	d.Backends.Unavailable["attribution"] = "not part of this run: only exact accounting was attached"
	d.Overhead = report.Overhead{Misses: iv.BPFMisses}
	report.ScopeOverhead(&d.Overhead, scope...)
	d.Overhead.DispatchNS = s.dispatchNS
	d.Overhead.HookDispatchNS, _ = HookDispatchNS()
	prec, warnings := CheckPrecision(iv, HostClock(h))
	d.Precision = &prec
	d.Warnings = append(d.Warnings, warnings...)
	if h.IRQTimeAccounting {
		d.Warnings = append(d.Warnings, "CONFIG_IRQ_TIME_ACCOUNTING is set: the kernel removes softirq and hardirq time from each task's sum_exec_runtime, so schedstat is lower than zcprof's on-CPU time by the interrupt time shown")
	}
	if iv.Dropped > 0 {
		d.Warnings = append(d.Warnings, fmt.Sprintf("the stats map was full: %d counts were dropped in this interval (more threads between two readings than it holds; exited threads are released one reading after their exit was seen)", iv.Dropped))
	}
	if n := iv.MapFull["threads"]; n > 0 {
		d.Warnings = append(d.Warnings, fmt.Sprintf("the threads map was full: %d attempts to track a new thread were refused in this interval (those threads' time is on the SYSTEM row as other tasks)", n))
	}
	if n := iv.MapFull["thread_infos"]; n > 0 {
		d.Warnings = append(d.Warnings, fmt.Sprintf("the thread_infos map was full: %d new threads have no record of their process in this interval (their time is reported under PID 0)", n))
	}
	if len(iv.MapFull) > 0 {
		d.Overhead.MapFull = iv.MapFull
	}
	if iv.ByteClassDrops > 0 {
		d.Warnings = append(d.Warnings, fmt.Sprintf("%d byte-class updates were refused by a busy map bucket: byte classes may be slightly low", iv.ByteClassDrops))
	}
	if iv.MissedSwitches > 0 {
		d.Warnings = append(d.Warnings, fmt.Sprintf("%d context switches were not reported by the sched_switch tracepoint (a task was found running with no event; seen on patched kernels): zcprof placed those boundaries where the kernel started the task (se.exec_start)", iv.MissedSwitches))
	}
	if iv.BPFMisses > 0 {
		d.Warnings = append(d.Warnings, "the kernel skipped some accounting events because another BPF program was running on the same CPU (recursion guard); totals may be slightly low")
	}
	return d
}
