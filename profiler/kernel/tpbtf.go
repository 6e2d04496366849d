package kernel

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// TpBTFProbe: a tp_btf program on sched_switch (typed tracepoint
// arguments, the accounting's preferred backend).
var TpBTFProbe = AttachProbe{
	Kind: TpBTF, Program: progTpBTF, hit: hitTpBTF, Target: "sched_switch",
	Attach: func(prog *ebpf.Program) (link.Link, error) {
		return link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceRawTp})
	},
	Trigger: sleepBriefly,
}
