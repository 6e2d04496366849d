package kernel

import (
	"errors"
	"strings"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// errENOTSUPP is the kernel-internal 524, which leaks out of BPF attach
// paths (bpf_arch_text_poke) and has no name in x/sys.
const errENOTSUPP = unix.Errno(524)

// Env is what an explanation of a refusal may depend on.
type Env struct {
	Privileged bool              // Privileged() == nil
	Config     map[string]string // ReadConfig; nil when unknown
	Lockdown   string            // Lockdown()
	Paranoid   string            // Sysctl("kernel.perf_event_paranoid")
}

// Describe turns a load or attach error into one line:
// "<kind>: <stage> failed: <kernel error> (<why>)".
func (e Env) Describe(kind, stage string, err error) string {
	msg := kind + ": " + stage + " failed: " + errText(err)
	if why := e.why(kind, err); why != "" {
		msg += " (" + why + ")"
	}
	return msg
}

// errText prefers the bare errno text: cilium/ebpf wraps errors with hints
// that can mislead (see why).
func errText(err error) string {
	var errno unix.Errno
	switch {
	case errors.As(err, &errno) && errno == errENOTSUPP:
		return "not supported (ENOTSUPP)"
	case errors.As(err, &errno):
		return errno.Error()
	case errors.Is(err, ebpf.ErrNotSupported):
		return "not supported by this kernel"
	}
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// why adds the cause the kernel's errno does not tell.
func (e Env) why(kind string, err error) string {
	if !e.Privileged && (errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES)) {
		return "needs root or CAP_BPF and CAP_PERFMON"
	}
	switch kind {
	case Fentry:
		switch {
		case errors.Is(err, unix.EPERM):
			// cilium/ebpf suggests MEMLOCK for any EPERM before the verifier
			// runs. Not the cause: the rlimit was removed and BPF memory is
			// charged to the memcg. The kernel refuses the trampoline.
			return "function tracing is locked down on this kernel; not RLIMIT_MEMLOCK, whatever cilium/ebpf's hint says"
		case errors.Is(err, unix.EBUSY):
			return "the function cannot take a BPF trampoline (no __fentry__ call or already patched)"
		case errors.Is(err, errENOTSUPP), errors.Is(err, ebpf.ErrNotSupported):
			return "no BPF trampoline on this kernel"
		}
		if !ConfigEnabled(e.Config, "CONFIG_FUNCTION_TRACER") && e.Config != nil {
			return "kernel built without CONFIG_FUNCTION_TRACER"
		}
	case Kprobe:
		if e.Config != nil && !ConfigEnabled(e.Config, "CONFIG_KPROBES") {
			return "kernel built without CONFIG_KPROBES"
		}
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINVAL) {
			return "symbol not found or blacklisted for kprobes"
		}
	case KprobeMulti:
		if e.Config != nil && !ConfigEnabled(e.Config, "CONFIG_FPROBE") {
			return "kernel built without CONFIG_FPROBE"
		}
	case PerfEvent:
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return "kernel.perf_event_paranoid=" + e.Paranoid
		}
	}
	if errors.Is(err, unix.EPERM) && strings.HasPrefix(e.Lockdown, "confidentiality") {
		return "kernel lockdown=confidentiality forbids reading kernel memory from BPF"
	}
	return ""
}
