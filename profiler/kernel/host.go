package kernel

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Host is what every zcprof result records about the machine.
type Host struct {
	Kernel            string
	CPUs              int
	HZ                int // CONFIG_HZ, 0 when the config cannot be read
	IRQTimeAccounting bool
	// StealTimeAccounting (CONFIG_PARAVIRT_TIME_ACCOUNTING): time the
	// hypervisor stole is left out of each task's sum_exec_runtime too.
	StealTimeAccounting bool
	PreemptRT           bool // a PREEMPT_RT kernel: softirqs and IRQ handlers run in preemptible threads
}

// ReadHost reads the kernel release, online CPUs and the two config options
// that change what times() and schedstat mean.
func ReadHost() Host {
	h := configFacts()
	if cpus, err := OnlineCPUs(); err == nil {
		h.CPUs = len(cpus)
	}
	return h
}

// configFacts are the host facts from the running kernel and its config,
// read once per process: they cannot change while it runs, and parsing
// the config for every document was a fifth of a long profile's
// allocations.
var configFacts = sync.OnceValue(func() Host {
	h := Host{Kernel: Release()}
	cfg, _, _ := ReadConfig(h.Kernel)
	h.HZ = ConfigHZ(cfg)
	h.IRQTimeAccounting = ConfigEnabled(cfg, "CONFIG_IRQ_TIME_ACCOUNTING")
	h.StealTimeAccounting = ConfigEnabled(cfg, "CONFIG_PARAVIRT_TIME_ACCOUNTING")
	h.PreemptRT = preemptRT(cfg)
	return h
})

// preemptRT: /sys/kernel/realtime (1 on PREEMPT_RT kernels) needs no
// config file; the config's CONFIG_PREEMPT_RT is the fallback.
func preemptRT(cfg map[string]string) bool {
	if b, err := os.ReadFile("/sys/kernel/realtime"); err == nil {
		return strings.TrimSpace(string(b)) == "1"
	}
	return ConfigEnabled(cfg, "CONFIG_PREEMPT_RT")
}

// Release is the running kernel's release (uname -r), "unknown" if uname
// fails.
func Release() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "unknown"
	}
	return strings.TrimRight(string(u.Release[:]), "\x00")
}

// OnlineCPUs lists the online CPUs (/sys/devices/system/cpu/online, e.g.
// "0-3,6"); the sampling backend opens one perf event on each.
func OnlineCPUs() ([]int, error) {
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
