package profiler

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Capability numbers from include/uapi/linux/capability.h (5.8+).
const (
	capPerfmon = 38
	capBPF     = 39
)

// ErrPrivileges is the one-line answer when zcprof may not load BPF.
var ErrPrivileges = errors.New("zcprof needs root, or the capabilities CAP_BPF and CAP_PERFMON (e.g. sudo zcprof ...)")

// Privileged returns nil when this process may load and attach zcprof's
// programs: root, or both CAP_BPF and CAP_PERFMON in the effective set.
func Privileged() error {
	if os.Geteuid() == 0 {
		return nil
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return ErrPrivileges
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	if has(capBPF) && has(capPerfmon) {
		return nil
	}
	return ErrPrivileges
}
