package attrib

import (
	"github.com/cilium/ebpf/btf"
)

// Sample lateness (struct zc_timer in bpf/sampler.h) needs the kernel's
// view of the perf event, which bpf_cast_to_kern_ctx (6.2+) gives a
// perf_event program. Older kernels sample as before, with no sample set
// aside as early.

// unavailableLateness is the backends.unavailable key when it is missing.
const unavailableLateness = "sample lateness"

// lateUnmeasured says why sample lateness is not measured here ("" if it is).
func lateUnmeasured() string {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return "kernel BTF: " + oneLine(err)
	}
	var fn *btf.Func
	if err := spec.TypeByName("bpf_cast_to_kern_ctx", &fn); err != nil {
		return "no bpf_cast_to_kern_ctx kfunc (6.2+): no sample is set aside as delivered early by a hypervisor"
	}
	return ""
}
