package kernel

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// RawTpProbe: a raw_tp program on sched_switch (the accounting's fallback:
// the same tracepoints, arguments read with bpf_probe_read).
var RawTpProbe = AttachProbe{
	Kind: RawTp, Program: progRawTp, hit: hitRawTp, Target: "sched_switch",
	Attach: func(prog *ebpf.Program) (link.Link, error) {
		return link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sched_switch", Program: prog})
	},
	Trigger: sleepBriefly,
}
