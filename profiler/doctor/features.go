package doctor

import (
	"os"

	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/caps"
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/workload/iouring"
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

// checkIOUring asks what `run` asks before an io_uring cell
// (iouring.Available: a real io_uring_setup(1), as io_uring_disabled alone
// does not tell under seccomp, gVisor or without CONFIG_IO_URING).
func checkIOUring(disabled string) Check {
	c := Check{Name: "io_uring", Kind: KindFeature, Status: StatusOK,
		Detail: "io_uring_setup(1) works; kernel.io_uring_disabled=" + disabled}
	if err := iouring.Available(); err != nil {
		c.Status, c.Detail = StatusUnavailable, err.Error()
		c.Instead = "tx.io_uring transfers (SEND_ZC) cannot be run or seen"
	}
	return c
}
