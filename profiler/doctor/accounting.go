package doctor

import (
	"errors"

	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"
)

// Selection is a backend choice and why the better rungs were skipped.
type Selection struct {
	Backend string `json:"backend"`
	// Unavailable maps each skipped backend to the kernel's reason, ready
	// for backends.unavailable in the zcprof/v1 JSON document.
	Unavailable map[string]string `json:"unavailable,omitempty"`
}

// SelectAccounting is the cheap check the profiler session uses to choose
// its exact-accounting backend: "tp_btf" when the kernel's BTF has
// btf_trace_sched_switch and a tp_btf program loads and attaches to it,
// else "raw_tp" when a raw_tp program attaches. Both probes are detached
// and closed before it returns. The error is non-nil only when neither
// works (then Unavailable says why for both).
func SelectAccounting() (Selection, error) {
	s := Selection{Backend: BackendNone, Unavailable: map[string]string{}}
	_ = rlimit.RemoveMemlock()
	e := env{privileged: Privileged() == nil}
	p, err := newProbeSet()
	if err != nil {
		return s, err
	}
	defer p.Close()

	tp := Check{Name: AttachTpBTF, Status: StatusUnavailable}
	if spec, err := btf.LoadKernelSpec(); err != nil {
		tp.Detail = "tp_btf: kernel BTF: " + err.Error()
	} else if _, err := spec.AnyTypeByName("btf_trace_sched_switch"); err != nil {
		tp.Detail = "tp_btf: no btf_trace_sched_switch in kernel BTF"
	} else {
		tp.Detail = p.attachTracepoint(e, AttachTpBTF, "sched_switch")
		if tp.Detail == "" {
			s.Backend = BackendTpBTF
			return s, nil
		}
	}
	s.Unavailable[AttachTpBTF] = tp.Detail

	if why := p.attachTracepoint(e, AttachRawTp, "sched_switch"); why != "" {
		s.Unavailable[AttachRawTp] = why
		return s, errors.New("no exact-accounting backend: " + tp.Detail + "; " + why)
	}
	s.Backend = BackendRawTp
	return s, nil
}

// AccountingBackend returns SelectAccounting's backend name: "tp_btf" or
// "raw_tp". Prefer SelectAccounting to record why tp_btf was skipped.
func AccountingBackend() (string, error) {
	s, err := SelectAccounting()
	return s.Backend, err
}
