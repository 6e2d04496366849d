package iouring

import (
	"fmt"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DisabledSysctl is where the kernel says whether io_uring may be used
// (0 enabled, 1 only for CAP_SYS_ADMIN / io_uring_group, 2 disabled).
const DisabledSysctl = "/proc/sys/kernel/io_uring_disabled"

// Available reports why io_uring cannot be used here, or nil. It reads the
// sysctl for a clear message and then really creates a ring, because
// io_uring_disabled=1 still allows privileged users and kernels without
// CONFIG_IO_URING have no sysctl at all (io_uring_setup gives ENOSYS).
func Available() error {
	disabled := ""
	if b, err := os.ReadFile(DisabledSysctl); err == nil {
		if disabled = strings.TrimSpace(string(b)); disabled == "2" {
			return fmt.Errorf("io_uring is disabled on this kernel (kernel.io_uring_disabled=2)")
		}
	}
	var p params
	fd, err := setup(1, &p)
	if err != nil {
		switch err {
		case unix.ENOSYS:
			return fmt.Errorf("io_uring is not built into this kernel (io_uring_setup: ENOSYS)")
		case unix.EPERM:
			if disabled == "1" {
				return fmt.Errorf("io_uring is not permitted for this user (kernel.io_uring_disabled=1: only members of kernel.io_uring_group; io_uring_setup: EPERM)")
			}
			return fmt.Errorf("io_uring is not permitted for this user (io_uring_setup: EPERM)")
		}
		return fmt.Errorf("io_uring_setup: %w", err)
	}
	unix.Close(fd)
	return nil
}

// Supported asks the kernel (IORING_REGISTER_PROBE) whether opcode op is
// implemented.
func Supported(op uint8) (bool, error) {
	r, err := New(1)
	if err != nil {
		return false, err
	}
	defer r.Close()
	var pr probe
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerProbe,
		uintptr(unsafe.Pointer(&pr)), uintptr(len(pr.Ops)), 0, 0)
	if errno != 0 {
		return false, fmt.Errorf("IORING_REGISTER_PROBE: %w", errno)
	}
	if op > pr.LastOp || int(op) >= int(pr.OpsLen) {
		return false, nil
	}
	return pr.Ops[op].Flags&1 != 0, nil
}
