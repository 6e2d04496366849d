// Package doctor is `zcprof doctor`: it runs profiler/kernel's probes (one
// trivial BPF program per attach kind, bpf/probes.bpf.c, then each
// tracepoint and key function zcprof uses), says for each what works and
// what zcprof does instead, and which backends `auto` picks (kernel.Decide,
// the capability ladder of docs/architecture.md). It only assembles and
// renders a Report: host facts and probes live in profiler/kernel, which
// the core uses too. Everything it loads is closed before Run returns.
//
// Code map: doctor.go (Run), kinds.go (attach kinds), tracepoints.go and
// functions.go (the per-tracepoint and per-function checks), features.go
// (privileges, BTF, io_uring), decide.go (the decision into the report),
// report.go (the JSON model), text.go (the text report).
package doctor

import (
	"time"

	"github.com/cilium/ebpf/rlimit"

	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/ksym"
)

// Options tune Run. The zero value is fine.
type Options struct {
	// Busy is how long the perf_event check keeps a CPU busy in the kernel
	// while sampling. Default 200ms.
	Busy time.Duration
	// SampleHz is the cpu-clock sampling frequency. Default 999.
	SampleHz uint64
	// Functions overrides KeyFunctions.
	Functions []string
}

// Run probes the kernel. It never fails: whatever does not work is a Check
// with the kernel's reason. Call Privileged first to give a clear error
// instead of a report full of EPERM.
func Run(opts Options) Report {
	if opts.Busy <= 0 {
		opts.Busy = 200 * time.Millisecond
	}
	if opts.SampleHz == 0 {
		opts.SampleHz = 999
	}
	if opts.Functions == nil {
		opts.Functions = KeyFunctions()
	}

	// First: the lockdown mode is read through securityfs, and cilium/ebpf
	// remembers where tracefs is (or that it is not) from its first look.
	pfs, release := checkPseudoFS()
	defer release()

	h := kernel.ReadHost()
	r := Report{Kernel: h.Kernel, CPUs: h.CPUs, HZ: h.HZ, IRQTimeAccounting: h.IRQTimeAccounting, PreemptRT: h.PreemptRT, Unavailable: map[string]string{}}
	cfg, src, cfgErr := kernel.ReadConfig(r.Kernel)
	r.Settings = Settings{
		Lockdown:          kernel.Lockdown(),
		KptrRestrict:      kernel.Sysctl("kernel.kptr_restrict"),
		PerfEventParanoid: kernel.Sysctl("kernel.perf_event_paranoid"),
		IOUringDisabled:   kernel.Sysctl("kernel.io_uring_disabled"),
		Config:            pickConfig(cfg),
		ConfigSource:      src,
	}
	if cfgErr != nil {
		r.Settings.ConfigSource = "unknown (" + cfgErr.Error() + ")"
	}

	priv := checkPrivileges()
	btfCheck, kernelBTF := checkBTF()
	r.Settings.BTF = kernelBTF != nil
	r.Checks = append(r.Checks, priv, btfCheck, checkIOUring(r.Settings.IOUringDisabled))
	r.Checks = append(r.Checks, pfs...)

	e := kernel.Env{Privileged: priv.Status == StatusOK, Config: cfg, Lockdown: r.Settings.Lockdown, Paranoid: r.Settings.PerfEventParanoid}
	// Before any load: on kernels < 5.11 BPF memory counts against
	// RLIMIT_MEMLOCK. Newer kernels charge the memcg and this is a no-op.
	_ = rlimit.RemoveMemlock()

	var syms ksym.Names
	if t, err := ksym.Read(); err == nil {
		syms = t.Names // addresses hidden by kptr_restrict do not matter here
	}
	p, err := kernel.NewProbes()
	if err != nil {
		for _, kind := range []string{kernel.TpBTF, kernel.RawTp, kernel.Fentry, kernel.Kprobe, kernel.KprobeMulti, kernel.PerfEvent} {
			r.Checks = append(r.Checks, Check{Name: kind, Kind: KindAttach, Status: StatusUnavailable, Detail: e.Describe(kind, "setup", err)})
		}
		apply(kernel.Decide(passed(r.Checks)), &r)
		return r
	}
	defer p.Close()

	var kinds []Check
	for _, a := range attachProbes(syms) {
		kinds = append(kinds, attachCheck(a.Kind, p.Try(e, a)))
	}
	kinds = append(kinds, attachCheck(kernel.PerfEvent, p.TryPerf(e, opts.Busy, opts.SampleHz)))
	r.Checks = append(r.Checks, kinds...)
	ok := passed(kinds)
	r.Checks = append(r.Checks, checkTracepoints(p, e, kernelBTF, ok[kernel.TpBTF], ok[kernel.RawTp])...)
	r.Checks = append(r.Checks, checkFunctions(p, e, opts.Functions, syms, ok[kernel.Fentry], ok[kernel.Kprobe])...)
	apply(kernel.Decide(ok), &r)
	return r
}

// passed maps each attach kind to whether its check is ok.
func passed(checks []Check) map[string]bool {
	ok := map[string]bool{}
	for _, c := range checks {
		if c.Kind == KindAttach {
			ok[c.Name] = c.Status == StatusOK
		}
	}
	return ok
}
