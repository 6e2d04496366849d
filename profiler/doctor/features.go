package doctor

import (
	"os"
	"unsafe"

	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/caps"
	"github.com/zcprof/zcprof/profiler/kernel"
)

func checkPrivileges() Check {
	c := Check{Name: "privileges", Kind: KindFeature, Status: StatusOK, Detail: "root"}
	if os.Geteuid() != 0 {
		c.Detail = caps.Join(kernel.Required)
	}
	if err := kernel.Privileged(); err != nil {
		c.Status, c.Detail = StatusUnavailable, err.Error()
		c.Instead = "every BPF check below fails with EPERM"
	} else if missing := caps.Missing(unix.CAP_SYSLOG); len(missing) > 0 {
		c.Status, c.Detail = StatusDegraded, c.Detail+"; CAP_SYSLOG missing: /proc/kallsyms hides kernel addresses"
		c.Instead = "no sampled stacks (sampling attribution), no check for sendfile/splice sources that cannot splice"
	}
	return c
}

// checkBTF loads the kernel's BTF (/sys/kernel/btf/vmlinux); the spec is
// reused for tracepoint lookups.
func checkBTF() (Check, *btf.Spec) {
	c := Check{Name: "btf", Kind: KindFeature, Status: StatusOK, Detail: "/sys/kernel/btf/vmlinux"}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		c.Status, c.Detail = StatusUnavailable, "load kernel BTF: "+err.Error()
		c.Instead = "tp_btf and fentry need it, and CO-RE programs cannot be relocated without it"
		return c, nil
	}
	return c, spec
}

// ioUringParamsSize is sizeof(struct io_uring_params): 10 u32 fields and
// the two 40-byte ring offset structs.
const ioUringParamsSize = 120

// checkIOUring makes a real io_uring_setup(1) call: io_uring_disabled
// alone does not tell (seccomp, gVisor, kernels without CONFIG_IO_URING).
func checkIOUring(disabled string) Check {
	c := Check{Name: "io_uring", Kind: KindFeature, Status: StatusOK}
	var params [ioUringParamsSize]byte
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
	if errno != 0 {
		c.Status = StatusUnavailable
		c.Detail = "io_uring_setup(1): " + errno.Error()
		switch {
		case errno == unix.ENOSYS:
			c.Detail += " (kernel built without CONFIG_IO_URING, or blocked by seccomp)"
		case disabled == "2":
			c.Detail += " (kernel.io_uring_disabled=2)"
		case disabled == "1":
			c.Detail += " (kernel.io_uring_disabled=1: only members of kernel.io_uring_group)"
		}
		c.Instead = "tx.io_uring transfers (SEND_ZC) cannot be run or seen"
		return c
	}
	unix.Close(int(fd))
	c.Detail = "io_uring_setup(1) works; kernel.io_uring_disabled=" + disabled
	return c
}
