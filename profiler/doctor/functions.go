package doctor

import (
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/ksym"
)

// KeyFunctions are the fentry/kprobe targets: the callers
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
func checkFunctions(p *kernel.Probes, e kernel.Env, funcs []string, syms ksym.Names, fentry, kprobe bool) []Check {
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
			ok, detail := p.AttachFunction(e, fn, fentry, kprobe)
			c.Detail = detail
			if ok {
				c.Status = StatusOK
			} else {
				c.Instead = "exact time from its callers; " + insteadSampled
			}
		}
		out = append(out, c)
	}
	return out
}
