package profiler

import (
	"fmt"

	"github.com/zcprof/zcprof/profiler/doctor"
	"github.com/zcprof/zcprof/profiler/report"
)

// NewDocument fills what every result shares: host, backends, overhead,
// the system row and the precision self-check. measuredNS is the on-CPU
// time of the targets the overhead share is relative to.
func (s *Session) NewDocument(command string, iv Interval, measuredNS uint64) *report.Document {
	h := doctor.ReadHost()
	d := &report.Document{
		Schema:  report.Schema,
		Command: command,
		Host:    report.Host{Kernel: h.Kernel, CPUs: h.CPUs, HZ: h.HZ, IRQTimeAccounting: h.IRQTimeAccounting},
		Backends: report.Backends{
			Accounting:  s.backend,
			Attribution: "",
			Unavailable: map[string]string{},
			ByteClasses: s.ByteClasses(),
			ProgramIDs:  s.ProgramIDs(),
		},
		DurationNS: iv.DurationNS,
		System:     SystemRow(iv),
	}
	for k, v := range s.unavailable {
		d.Backends.Unavailable[k] = v
	}
	d.Backends.Unavailable["attribution"] = "not part of this run: only exact accounting was attached"
	d.Overhead = report.Overhead{BPFNS: iv.BPFRunNS, Events: iv.BPFEvents, Misses: iv.BPFMisses}
	if measuredNS > 0 {
		d.Overhead.Share = float64(iv.BPFRunNS) / float64(measuredNS)
	}
	if iv.BPFEvents > 0 {
		d.Overhead.NSPerEvent = float64(iv.BPFRunNS) / float64(iv.BPFEvents)
	}
	prec, warnings := CheckPrecision(iv, h.IRQTimeAccounting)
	d.Precision = &prec
	d.Warnings = append(d.Warnings, warnings...)
	if h.IRQTimeAccounting {
		d.Warnings = append(d.Warnings, "CONFIG_IRQ_TIME_ACCOUNTING is set: the kernel removes softirq and hardirq time from each task's sum_exec_runtime, so schedstat is lower than zcprof's on-CPU time by the interrupt time shown")
	}
	if iv.Dropped > 0 {
		d.Warnings = append(d.Warnings, "the accounting maps were full: some counts were dropped (too many threads)")
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
