package kernel

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// KprobeProbe: a kprobe on tcp_sendmsg (the function-exact backend's
// fallback; needs CONFIG_KPROBES).
var KprobeProbe = AttachProbe{
	Kind: Kprobe, Program: progKprobe, hit: hitKprobe, Target: "tcp_sendmsg",
	Attach:  func(prog *ebpf.Program) (link.Link, error) { return link.Kprobe("tcp_sendmsg", prog, nil) },
	Trigger: sendTCP,
}
