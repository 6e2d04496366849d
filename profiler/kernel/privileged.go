package kernel

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/caps"
)

// Required are the capabilities without which nothing loads: CAP_BPF for
// programs and maps, CAP_PERFMON for tracing programs and perf events.
var Required = []caps.Cap{unix.CAP_BPF, unix.CAP_PERFMON}

// Setcap is the command that gives the binary every capability zcprof
// uses (README, "Requirements").
const Setcap = "sudo setcap cap_bpf,cap_perfmon,cap_syslog+ep zcprof"

// Privileged returns nil when the process may load tracing BPF programs and
// open per-CPU perf events: CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN) in
// its effective set, whether it is root or not. Otherwise it returns one
// line naming exactly the capabilities missing; the CLI prints it as is.
func Privileged() error {
	missing := caps.Missing(Required...)
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("needs %s, which this process lacks (run as root with all capabilities, or: %s)", caps.Join(missing), Setcap)
}
