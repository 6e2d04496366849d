package kernel

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// TryPerf samples cpu-clock on every online CPU with the doctor_perf
// program while this thread stays busy in the kernel for busy, and passes
// only if samples with a kernel stack were recorded. cpu-clock is a
// software hrtimer event, so it works on VMs without a PMU (hardware
// cycles would not).
func (p *Probes) TryPerf(e Env, busy time.Duration, hz uint64) Result {
	c := Result{Status: StatusUnavailable}
	cpus, err := OnlineCPUs()
	if err != nil {
		c.Detail = "perf_event: " + err.Error()
		return c
	}
	coll, prog, err := p.load(progPerf, "")
	if err != nil {
		c.Detail = e.Describe(PerfEvent, "load", err)
		return c
	}
	defer coll.Close()

	var closers []func() error
	defer func() {
		for _, f := range closers {
			f()
		}
	}()
	for _, cpu := range cpus {
		attr := unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_SOFTWARE,
			Config: unix.PERF_COUNT_SW_CPU_CLOCK,
			Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
			Sample: hz,
			Bits:   unix.PerfBitFreq,
		}
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			c.Detail = e.Describe(PerfEvent, fmt.Sprintf("perf_event_open(cpu-clock, cpu %d)", cpu), err)
			return c
		}
		closers = append(closers, func() error { return unix.Close(fd) })
		// Links close before the perf fds: the defers run in reverse order.
		l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
		if err != nil {
			c.Detail = e.Describe(PerfEvent, "attach (BPF link)", err)
			return c
		}
		closers = append([]func() error{l.Close}, closers...)
	}

	samples0, stacks0 := p.count(hitPerf), p.count(hitPerfKstack)
	busyInKernel(busy)
	samples, stacks := p.count(hitPerf)-samples0, p.count(hitPerfKstack)-stacks0

	detail := fmt.Sprintf("cpu-clock at %d Hz on %d CPUs: %d samples in %v busy, %d with a kernel stack", hz, len(cpus), samples, busy, stacks)
	switch {
	case stacks > 0:
		c.Status = StatusOK
	case samples > 0:
		c.Status = StatusDegraded
		detail += " (bpf_get_stackid found no kernel stacks)"
	default:
		detail += " (no samples: the event never fired)"
	}
	c.Detail = detail
	return c
}
