// Package doctor probes what this kernel lets zcprof do, by really loading
// and attaching one trivial BPF program per attach kind (bpf/probes.bpf.c),
// and decides which backends `auto` picks (DESIGN.md, "capability ladder").
// Everything it loads is closed before Run returns.
package doctor

import (
	"strings"
	"time"

	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
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
		opts.Functions = KeyFunctions
	}

	h := ReadHost()
	r := Report{Kernel: h.Kernel, CPUs: h.CPUs, HZ: h.HZ, IRQTimeAccounting: h.IRQTimeAccounting, Unavailable: map[string]string{}}
	cfg, src, cfgErr := readKernelConfig(r.Kernel)
	r.Settings = Settings{
		Lockdown:          readLockdown(),
		KptrRestrict:      readSysctl("kernel.kptr_restrict"),
		PerfEventParanoid: readSysctl("kernel.perf_event_paranoid"),
		IOUringDisabled:   readSysctl("kernel.io_uring_disabled"),
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

	e := env{privileged: priv.Status == StatusOK, config: cfg, lockdown: r.Settings.Lockdown, paranoid: r.Settings.PerfEventParanoid}
	// Before any load: on kernels < 5.11 BPF memory counts against
	// RLIMIT_MEMLOCK. Newer kernels charge the memcg and this is a no-op.
	_ = rlimit.RemoveMemlock()

	syms, _ := readKallsyms()
	p, err := newProbeSet()
	if err != nil {
		for _, kind := range []string{AttachTpBTF, AttachRawTp, AttachFentry, AttachKprobe, AttachKprobeMulti, AttachPerfEvent} {
			r.Checks = append(r.Checks, Check{Name: kind, Kind: KindAttach, Status: StatusUnavailable, Detail: e.describe(kind, "setup", err)})
		}
		decide(passed(r.Checks)).apply(&r)
		return r
	}
	defer p.Close()

	kinds := []Check{
		p.checkTpBTF(e),
		p.checkRawTp(e),
		p.checkFentry(e),
		p.checkKprobe(e),
		p.checkKprobeMulti(e, syms),
		p.checkPerf(e, opts.Busy, opts.SampleHz),
	}
	r.Checks = append(r.Checks, kinds...)
	ok := passed(kinds)
	r.Checks = append(r.Checks, p.checkTracepoints(e, kernelBTF, ok[AttachTpBTF], ok[AttachRawTp])...)
	r.Checks = append(r.Checks, p.checkFunctions(e, opts.Functions, syms, ok[AttachFentry], ok[AttachKprobe])...)
	decide(ok).apply(&r)
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

func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return strings.TrimRight(string(u.Release[:]), "\x00")
}
