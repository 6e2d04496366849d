package kernel

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// FentryProbe: a fentry program on tcp_sendmsg (BPF trampolines, the
// function-exact backend's preferred mode). Refused with EPERM where
// function tracing is locked (docs/known-issues.md).
var FentryProbe = AttachProbe{
	Kind: Fentry, Program: progFentry, hit: hitFentry, Target: "tcp_sendmsg",
	Attach:  attachFentry,
	Trigger: sendTCP,
}

func attachFentry(prog *ebpf.Program) (link.Link, error) {
	return link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceFEntry})
}
