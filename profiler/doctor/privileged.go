package doctor

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// errUnprivileged is one line on purpose: the CLI prints it as is.
var errUnprivileged = errors.New("zcprof needs root or the capabilities CAP_BPF and CAP_PERFMON (e.g. sudo setcap cap_bpf,cap_perfmon+ep zcprof)")

// Privileged returns nil when the process may load tracing BPF programs and
// open per-CPU perf events: root, or CAP_BPF plus CAP_PERFMON in the
// effective set. Otherwise it returns a one-line error naming them.
func Privileged() error {
	if os.Geteuid() == 0 {
		return nil
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData // version 3 uses two 32-bit words
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return errUnprivileged
	}
	if hasCap(data, unix.CAP_BPF) && hasCap(data, unix.CAP_PERFMON) {
		return nil
	}
	return errUnprivileged
}

func hasCap(data [2]unix.CapUserData, c int) bool {
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0
}
