package doctor

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// checkPerf samples cpu-clock on every online CPU with the doctor_perf
// program while this thread stays busy in the kernel, and passes only if
// samples with a kernel stack were recorded. cpu-clock is a software hrtimer
// event, so it works on VMs without a PMU (hardware cycles would not).
func (p *probeSet) checkPerf(e env, busy time.Duration, hz uint64) Check {
	c := Check{Name: AttachPerfEvent, Kind: KindAttach, Status: StatusUnavailable}
	cpus, err := onlineCPUs()
	if err != nil {
		c.Detail = "perf_event: " + err.Error()
		return c
	}
	coll, prog, err := p.load(progPerf, "")
	if err != nil {
		c.Detail = e.describe(AttachPerfEvent, "load", err)
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
			c.Detail = e.describe(AttachPerfEvent, fmt.Sprintf("perf_event_open(cpu-clock, cpu %d)", cpu), err)
			return c
		}
		closers = append(closers, func() error { return unix.Close(fd) })
		// Links close before the perf fds: the defers run in reverse order.
		l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
		if err != nil {
			c.Detail = e.describe(AttachPerfEvent, "attach (BPF link)", err)
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

// onlineCPUs parses /sys/devices/system/cpu/online ("0-3,6").
func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, err
	}
	return parseCPUList(strings.TrimSpace(string(b)))
}

func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("bad CPU list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("bad CPU list %q", s)
			}
		}
		for i := a; i <= b; i++ {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) == 0 {
		return nil, errors.New("no online CPUs")
	}
	return cpus, nil
}

// OnlineCPUs lists the online CPUs (/sys/devices/system/cpu/online); the
// sampling backend opens one perf event on each.
func OnlineCPUs() ([]int, error) { return onlineCPUs() }
