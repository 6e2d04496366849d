package doctor

import (
	"github.com/cilium/ebpf/btf"

	"github.com/zcprof/zcprof/profiler/kernel"
)

// tracepoint is one tracepoint zcprof uses and what it does without it.
type tracepoint struct {
	name    string
	since   string // kernel that added it, when recent
	instead string
}

// Tracepoints lists the tracepoints zcprof uses (docs/architecture.md,
// "Kernel facts the code relies on").
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
	{name: "sock_send_length", since: "6.3", instead: "bytes per send from syscall return values"},
	{name: "sock_recv_length", since: "6.3", instead: "bytes per receive from syscall return values"},
	{name: "net_dev_start_xmit", instead: "no per-skb zero-copy flags on transmit"},
	{name: "netif_receive_skb", instead: "deferred copies of zero-copy skbs on local delivery are not counted"},
	{name: "inet_sk_error_report", instead: "MSG_ZEROCOPY completions are not seen"},
	{name: "skb_copy_datagram_iovec", instead: "received-by-copy bytes from syscall return values"},
	{name: "io_uring_complete", instead: "io_uring SEND_ZC notifications (and their COPIED bit) are not seen"},
}

// checkTracepoints looks up btf_trace_<name> in the kernel's BTF, then
// really attaches: tp_btf when that works, raw_tp otherwise. An attach is
// cheap (one trampoline or probe, detached at once).
func checkTracepoints(p *kernel.Probes, e kernel.Env, spec *btf.Spec, tpBTF, rawTP bool) []Check {
	var out []Check
	for _, tp := range tracepoints {
		c := Check{Name: tp.name, Kind: KindTracepoint, Status: StatusUnavailable, Instead: tp.instead}
		if spec != nil {
			var fn *btf.Typedef
			if err := spec.TypeByName("btf_trace_"+tp.name, &fn); err != nil {
				c.Detail = "not in this kernel (no btf_trace_" + tp.name + " in BTF)"
				if tp.since != "" {
					c.Detail += "; added in " + tp.since
				}
				out = append(out, c)
				continue
			}
		}
		method := AttachTpBTF
		if !tpBTF {
			method = AttachRawTp
		}
		switch {
		case tpBTF || rawTP:
			if why := p.AttachTracepoint(e, method, tp.name); why != "" {
				c.Detail = why
			} else {
				c.Status, c.Detail, c.Instead = StatusOK, "attached ("+method+")", ""
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
