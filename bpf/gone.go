package bpf

import (
	"time"

	"github.com/cilium/ebpf"
)

// WaitGone waits (at most 2 s) until the kernel has freed the programs with
// these ids: link release is deferred past an RCU grace period, and a user
// who runs `bpftool prog list` right after zcprof exits must see none.
func WaitGone(ids []uint32) {
	deadline := time.Now().Add(2 * time.Second)
	for _, id := range ids {
		for time.Now().Before(deadline) {
			p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
			if err != nil {
				break
			}
			p.Close()
			time.Sleep(5 * time.Millisecond)
		}
	}
}
