package doctor

import (
	"github.com/cilium/ebpf/btf"

	"github.com/zcprof/zcprof/profiler/kernel"
)

// tracepoint is one tracepoint zcprof uses and what it does without it.
type tracepoint struct {
	name    string
	alias   string // its name on older kernels, tried when name is missing
	group   string // set: attached as a classic tracepoint, by its tracefs id
	since   string // kernel that added it, when recent
	instead string
}

// tracepoints lists every tracepoint a zcprof program attaches to
// (TestTracepointsAreTheProgramsOwn holds it to the BPF objects; the
// classic syscall tracepoints that stand in for sock_send_length before
// 6.3 are its "instead"), see docs/architecture.md, "Kernel facts the code
// relies on".
var tracepoints = []tracepoint{
	{name: "sched_switch", instead: "no exact accounting: on-CPU time cannot be measured"},
	{name: "sys_enter", instead: "no per-path syscall split"},
	{name: "sys_exit", instead: "no per-path syscall split"},
	{name: "softirq_entry", instead: "softirq work stays inside the interrupted context"},
	{name: "softirq_exit", instead: "softirq work stays inside the interrupted context"},
	{name: "irq_handler_entry", instead: "hardirq work stays inside the interrupted context"},
	{name: "irq_handler_exit", instead: "hardirq work stays inside the interrupted context"},
	{name: "sched_process_fork", instead: "threads started during a profile are not followed"},
	{name: "sched_process_exit", instead: "exiting threads are not flushed when they exit"},
	{name: "sched_process_exec", instead: "comm changes on exec are not seen"},
	{name: "tcp_sendmsg_locked", since: "6.16", instead: "per-send class from net_dev_start_xmit skb flags and syscall arguments"},
	{name: "sock_send_length", since: "6.3", instead: "bytes per send from the send syscalls' classic tracepoints (their return values); io_uring sends' bytes are not counted"},
	{name: "net_dev_start_xmit", instead: "no per-skb zero-copy flags on transmit: deferred copies for packet taps are not counted"},
	{name: "netif_receive_skb", instead: "deferred copies of zero-copy skbs on local delivery are not counted; no OWN/PEER split of NET_RX softirq time"},
	{name: "inet_sk_error_report", instead: "MSG_ZEROCOPY completions are not seen"},
	{name: "tcp_retransmit_skb", instead: "retransmitted zero-copy bytes (re-copies) are not counted"},
	{name: "io_uring_submit_req", alias: "io_uring_submit_sqe", instead: "an io_uring send's kind (SEND or SEND_ZC) is not known per socket"},
	{name: "io_uring_complete", group: "io_uring", instead: "io_uring SEND_ZC notifications (and their COPIED bit) are not seen"},
	{name: "tcp_probe", instead: "no OWN/PEER split of NET_RX softirq time"},
	{name: "kfree_skb", instead: "the OWN/PEER split's byte count keeps segments TCP dropped"},
}

// checkTracepoints looks up btf_trace_<name> (or its alias) in the
// kernel's BTF, then really attaches the way zcprof does: a classic
// tracepoint by its tracefs id, the others tp_btf when that works, raw_tp
// otherwise. An attach is cheap (one probe, detached at once).
func checkTracepoints(p *kernel.Probes, e kernel.Env, spec *btf.Spec, tpBTF, rawTP bool) []Check {
	var out []Check
	for _, tp := range tracepoints {
		c := Check{Name: tp.name, Kind: KindTracepoint, Status: StatusUnavailable, Instead: tp.instead}
		name := tp.name
		if spec != nil {
			name = inBTF(spec, tp)
			if name == "" {
				c.Detail = "not in this kernel (no btf_trace_" + tp.name + " in BTF)"
				if tp.since != "" {
					c.Detail += "; added in " + tp.since
				}
				out = append(out, c)
				continue
			}
		}
		as := ""
		if name != tp.name {
			as = " as " + name + ", its name on this kernel"
		}
		method := kernel.TpBTF
		if !tpBTF {
			method = kernel.RawTp
		}
		switch {
		case tp.group != "":
			if why := p.AttachClassicTracepoint(e, tp.group, name); why != "" {
				c.Detail = why
			} else {
				c.Status, c.Detail, c.Instead = StatusOK, "attached ("+kernel.Tracepoint+", by its tracefs id)"+as, ""
			}
		case tpBTF || rawTP:
			if why := p.AttachTracepoint(e, method, name); why != "" {
				c.Detail = why
			} else {
				c.Status, c.Detail, c.Instead = StatusOK, "attached ("+method+")"+as, ""
			}
		case spec != nil:
			c.Status, c.Detail = StatusDegraded, "in BTF; not attached: neither tp_btf nor raw_tp works"
		default:
			c.Detail = "not tried: no BTF, and neither tp_btf nor raw_tp works"
		}
		out = append(out, c)
	}
	return out
}

// inBTF is the name tp has in the kernel's BTF (btf_trace_<name>): its
// own, else its older alias; "" when neither is there.
func inBTF(spec *btf.Spec, tp tracepoint) string {
	for _, name := range []string{tp.name, tp.alias} {
		var fn *btf.Typedef
		if name != "" && spec.TypeByName("btf_trace_"+name, &fn) == nil {
			return name
		}
	}
	return ""
}
