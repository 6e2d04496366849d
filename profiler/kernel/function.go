package kernel

import (
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// AttachFunction tries a fentry program on fn (when fentry is usable here),
// then a kprobe (when kprobe is): detail is "attached (fentry)" or
// "attached (kprobe)" when one works, else every refusal, in order.
func (p *Probes) AttachFunction(e Env, fn string, fentry, kprobe bool) (ok bool, detail string) {
	var reasons []string
	if fentry {
		why := p.attachOne(e, Fentry, progFentry, fn, attachFentry)
		if why == "" {
			return true, "attached (fentry)"
		}
		reasons = append(reasons, why)
	}
	if kprobe {
		why := p.attachOne(e, Kprobe, progKprobe, "", func(prog *ebpf.Program) (link.Link, error) {
			return link.Kprobe(fn, prog, nil)
		})
		if why == "" {
			return true, "attached (kprobe)"
		}
		reasons = append(reasons, why)
	}
	return false, strings.Join(reasons, "; ")
}
