package doctor

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// KeyFunctions are the fentry/kprobe targets of KERNEL.md §12: the callers
// that give exact time, and the copy routines that on distro kernels only
// show up in sampled stacks (fentry EBUSY, kprobe not found). The same set
// as the function-exact backend's table (profiler/exact checks it).
var KeyFunctions = []string{
	"tcp_sendmsg_locked",
	"tcp_recvmsg_locked",
	"skb_copy_datagram_iter",
	"simple_copy_to_iter",
	"splice_to_socket",
	"filemap_splice_read",
	"skb_splice_from_iter",
	"do_splice_direct",
	"skb_zerocopy_iter_stream",
	"skb_copy_ubufs",
	"tcp_zerocopy_receive",
	"msg_zerocopy_realloc",
	"io_send_zc",
	"io_sendmsg_zc",
	"_copy_from_iter",
	"_copy_to_iter",
}

const insteadSampled = "its share comes from perf_event sampling of kernel stacks"

// checkFunctions reports each function: absent from kallsyms, attached
// with fentry (else kprobe), or present but not tried because neither
// attach kind works on this kernel. Each function is attached on its own,
// so that one refusal (EBUSY on the copy routines) does not hide the rest.
func (p *probeSet) checkFunctions(e env, funcs []string, syms kallsyms, fentry, kprobe bool) []Check {
	var out []Check
	for _, fn := range funcs {
		c := Check{Name: fn, Kind: KindFunction, Status: StatusUnavailable}
		switch {
		case syms != nil && !syms[fn]:
			c.Detail = "not in /proc/kallsyms (inlined or absent on this build)"
			c.Instead = "its cost is charged to its caller"
		case !fentry && !kprobe:
			c.Status = StatusDegraded
			c.Detail = "in /proc/kallsyms; not tried: fentry and kprobe unavailable"
			c.Instead = insteadSampled
		default:
			c.Status, c.Detail = p.attachFunction(e, fn, fentry, kprobe)
			if c.Status != StatusOK {
				c.Instead = "exact time from its callers; " + insteadSampled
			}
		}
		out = append(out, c)
	}
	return out
}

// attachFunction tries fentry, then kprobe, and reports the last refusal.
func (p *probeSet) attachFunction(e env, fn string, fentry, kprobe bool) (status, detail string) {
	var reasons []string
	if fentry {
		why := p.attachOne(e, AttachFentry, progFentry, fn, func(prog *ebpf.Program) (link.Link, error) {
			return link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceFEntry})
		})
		if why == "" {
			return StatusOK, "attached (fentry)"
		}
		reasons = append(reasons, why)
	}
	if kprobe {
		why := p.attachOne(e, AttachKprobe, progKprobe, "", func(prog *ebpf.Program) (link.Link, error) {
			return link.Kprobe(fn, prog, nil)
		})
		if why == "" {
			return StatusOK, "attached (kprobe)"
		}
		reasons = append(reasons, why)
	}
	detail = reasons[0]
	for _, r := range reasons[1:] {
		detail += "; " + r
	}
	return StatusUnavailable, detail
}

// attachOne loads name (retargeted at attachTo), attaches and detaches it.
// It returns "" on success, else the reason.
func (p *probeSet) attachOne(e env, kind, name, attachTo string, attach attachFn) string {
	coll, prog, err := p.load(name, attachTo)
	if err != nil {
		return e.describe(kind, "load", err)
	}
	defer coll.Close()
	l, err := attach(prog)
	if err != nil {
		return e.describe(kind, "attach", err)
	}
	l.Close()
	return ""
}
