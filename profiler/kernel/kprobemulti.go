package kernel

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/zcprof/zcprof/profiler/ksym"
)

// KprobeMultiProbe: one kprobe.multi link on every tcp_sendmsg* function
// of syms (needs CONFIG_FPROBE); without it kprobes attach one at a time.
func KprobeMultiProbe(syms ksym.Names) AttachProbe {
	targets := syms.WithPrefix("tcp_sendmsg")
	if len(targets) == 0 {
		targets = []string{"tcp_sendmsg"} // let the kernel say what is wrong
	}
	return AttachProbe{
		Kind: KprobeMulti, Program: progKmulti, hit: hitKprobeMulti,
		Target: fmt.Sprintf("tcp_sendmsg* (%d functions)", len(targets)),
		Attach: func(prog *ebpf.Program) (link.Link, error) {
			return link.KprobeMulti(prog, link.KprobeMultiOptions{Symbols: targets})
		},
		Trigger: sendTCP,
	}
}
