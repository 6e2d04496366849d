package attrib

import (
	"testing"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// Samples inside zcprof's own programs (or their hooks' dispatch) are not
// the workload's; other tools' BPF programs are still `tracing`.
func TestOwnStacks(t *testing.T) {
	const send = "entry_SYSCALL_64_after_hwframe;do_syscall_64;__x64_sys_sendto;__sys_sendto;__sock_sendmsg;"
	for _, tc := range []struct {
		stack string
		own   bool
	}{
		// In a program of ours, in a helper it called, in its dispatch.
		{send + "call_trace_sock_send_length.constprop.0;__traceiter_sock_send_length;bpf_trace_run3;bpf_prog_52d055c9103ebef8_zcb_sock_send_length [bpf]", true},
		{send + "tcp_sendmsg;__traceiter_tcp_sendmsg_locked;bpf_trace_run4;bpf_prog_fd64052530b34f64_zcb_tcp_sendmsg_locked [bpf];bpf_task_storage_get", true},
		{"asm_sysvec_apic_timer_interrupt;__irq_exit_rcu;handle_softirqs;net_rx_action;__napi_poll;process_backlog;__netif_receive_skb_core.constprop.0;__traceiter_netif_receive_skb;bpf_trace_run1;bpf_prog_8b9fd14857a1fa88_btf_own_netif_rx [bpf]", true},
		{"do_syscall_64;syscall_trace_enter;__traceiter_sys_enter;__bpf_trace_sys_enter;bpf_trace_run2", true},
		// A program name the kernel cut to 15 characters (no BTF).
		{send + "__traceiter_tcp_sendmsg_locked;bpf_trace_run4;bpf_prog_fd64052530b34f64_zcb_tcp_sendmsg", true},
		// Another tool's program, on a hook of ours or its own.
		{"do_syscall_64;syscall_trace_enter;__traceiter_sys_enter;__bpf_trace_sys_enter;bpf_trace_run2;bpf_prog_6deef7357e7b4530_sys_enter [bpf]", false},
		{send + "tcp_sendmsg;tcp_sendmsg_locked;__traceiter_tcp_probe;bpf_trace_run2;bpf_prog_0123456789abcdef_kprobe__tcp_sen [bpf]", false},
		// Dispatch of a hook zcprof never attaches to.
		{send + "tcp_sendmsg;__traceiter_tcp_cong_state_set;bpf_trace_run2", false},
		// The workload's own kernel work.
		{send + "tcp_sendmsg;tcp_sendmsg_locked;_copy_from_iter", false},
		{StackUser, false},
		{StackUnknown, false},
	} {
		if got := Own(tc.stack); got != tc.own {
			t.Errorf("Own(%s) = %v, want %v", tc.stack, got, tc.own)
		}
	}
	if got := Classify(send + "tcp_sendmsg;__traceiter_tcp_probe;bpf_trace_run2;bpf_prog_6deef7357e7b4530_sys_enter [bpf]"); got != Tracing {
		t.Errorf("another tool's program: %s, want %s", got, Tracing)
	}
}

// A path's categories share its exact time among the samples that are not
// zcprof's own: they add up to the path's time, and the handlers' samples
// take none of it.
func TestEstimateLeavesOwnSamplesOut(t *testing.T) {
	const (
		copyStack = "do_syscall_64;ksys_write;sock_write_iter;tcp_sendmsg;tcp_sendmsg_locked;_copy_from_iter"
		xmit      = "do_syscall_64;ksys_write;sock_write_iter;tcp_sendmsg;tcp_sendmsg_locked;tcp_push;__tcp_push_pending_frames;tcp_write_xmit"
		ours      = "do_syscall_64;ksys_write;sock_write_iter;__sock_sendmsg;__traceiter_sock_send_length;bpf_trace_run3;bpf_prog_52d055c9103ebef8_zcb_sock_send_length [bpf]"
	)
	k := profiler.Key{Gen: 1, Path: taxonomy.PathTxWrite, Ctx: taxonomy.CtxTask}
	s := &Samples{Counts: map[StackKey]uint64{
		{Key: k, Stack: copyStack}: 300, {Key: k, Stack: xmit}: 100, {Key: k, Stack: ours}: 400,
	}}
	iv := profiler.Interval{Threads: []profiler.ThreadDelta{{
		Info:     profiler.ThreadInfo{Gen: 1, TID: 1, TGID: 1},
		Counters: map[profiler.PathCtx]profiler.Counter{{Path: k.Path, Ctx: k.Ctx}: {NS: 1_000_000}},
	}}}
	cats := Estimate(iv, s)[k]
	got := map[string]uint64{}
	for _, c := range cats {
		got[c.Category] = c.CPUNS
	}
	if got[CopyTx] != 750_000 || got[TCPTx] != 250_000 || len(got) != 2 {
		t.Errorf("categories %v, want copy.tx 750000 and tcp.tx 250000 ns only", got)
	}
}
