package attrib

import (
	"math"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

func TestRulesUnique(t *testing.T) {
	seen := map[string]string{}
	known := map[string]bool{}
	for _, c := range CategoryNames {
		known[c] = true
	}
	for _, r := range Rules {
		if r.Copy != (r.Category == "") {
			t.Errorf("rule %v: copy rules have no category, all others have one", r.Funcs[:1])
		}
		for _, c := range []string{r.Category, r.CopyAs} {
			if c != "" && !known[c] {
				t.Errorf("rule %v: unknown category %q", r.Funcs[:1], c)
			}
		}
		for _, f := range r.Funcs {
			if prev, ok := seen[f]; ok {
				t.Errorf("pattern %q in two rules (%s and %s)", f, prev, r.Category)
			}
			seen[f] = r.Category
		}
	}
}

func TestClassify(t *testing.T) {
	const sys = "entry_SYSCALL_64_after_hwframe;do_syscall_64;"
	for _, tc := range []struct{ stack, want string }{
		// The copy, zero-copy and softirq stack signatures.
		{sys + "__x64_sys_sendto;__sys_sendto;tcp_sendmsg;tcp_sendmsg_locked;_copy_from_iter", CopyTx},
		{sys + "ksys_write;vfs_write;sock_write_iter;tcp_sendmsg;tcp_sendmsg_locked;rep_movs_alternative", CopyTx},
		{sys + "ksys_read;vfs_read;sock_read_iter;sock_recvmsg;tcp_recvmsg;tcp_recvmsg_locked;skb_copy_datagram_iter;__skb_datagram_iter;simple_copy_to_iter;_copy_to_iter", CopyRx},
		// An inline rep movsb (FSRM) in the function that inlined the copy.
		{sys + "ksys_write;vfs_write;sock_write_iter;tcp_sendmsg;tcp_sendmsg_locked;" + FrameRepMovs, CopyTx},
		{sys + "ksys_read;vfs_read;sock_read_iter;tcp_recvmsg;tcp_recvmsg_locked;skb_copy_datagram_iter;__skb_datagram_iter;simple_copy_to_iter;" + FrameRepMovs, CopyRx},
		// Hardened usercopy checks are part of the copy.
		{sys + "ksys_read;vfs_read;sock_read_iter;tcp_recvmsg_locked;skb_copy_datagram_iter;__skb_datagram_iter;simple_copy_to_iter;__check_object_size;__virt_addr_valid", CopyRx},
		// The deferred copy, with its page allocation, in NET_RX under the send.
		{sys + "__sys_sendto;tcp_sendmsg_locked;tcp_write_xmit;__tcp_transmit_skb;__ip_queue_xmit;ip_output;ip_finish_output2;__dev_queue_xmit;__local_bh_enable_ip;do_softirq.part.0;handle_softirqs;net_rx_action;__napi_poll;process_backlog;__netif_receive_skb_one_core;ip_local_deliver_finish;skb_copy_ubufs;__pi_memcpy", CopyDeferred},
		{sys + "tcp_sendmsg_locked;__dev_queue_xmit;handle_softirqs;net_rx_action;ip_local_deliver_finish;skb_copy_ubufs;alloc_pages_noprof;get_page_from_freelist", CopyDeferred},
		// Inside the softirq only the softirq's own frames count.
		{sys + "tcp_sendmsg_locked;_copy_from_iter;asm_sysvec_apic_timer_interrupt;sysvec_apic_timer_interrupt;__irq_exit_rcu;handle_softirqs;net_rx_action;__napi_poll;process_backlog;tcp_v4_rcv;tcp_rcv_established;tcp_ack", TCPRx},
		{sys + "__sys_sendto;tcp_sendmsg_locked;skb_zerocopy_iter_stream;__zerocopy_sg_from_iter;zerocopy_fill_skb_from_iter;iov_iter_get_pages2;__iov_iter_get_pages_alloc;gup_fast_fallback", ZcPin},
		{sys + "__x64_sys_vmsplice;iov_iter_get_pages2;gup_fast_fallback", ZcPin},
		{sys + "__x64_sys_getsockopt;do_tcp_getsockopt;tcp_zerocopy_receive;zap_page_range_single;tlb_finish_mmu;flush_tlb_mm_range;smp_call_function_many_cond", ZcPin},
		{sys + "__x64_sys_sendfile64;do_sendfile;do_splice_direct;splice_direct_to_actor;direct_splice_actor;splice_to_socket;skb_splice_from_iter", Splice},
		{sys + "__x64_sys_sendfile64;do_sendfile;splice_direct_to_actor;filemap_splice_read;filemap_get_pages;filemap_get_read_batch", Pagecache},
		{sys + "__x64_sys_sendfile64;do_sendfile;splice_direct_to_actor;direct_splice_actor;splice_to_socket;tcp_sendmsg_locked;tcp_stream_alloc_skb;__alloc_skb;kmem_cache_alloc_node_noprof", SkbMem},
		{sys + "ksys_read;sock_read_iter;tcp_recvmsg;lock_sock_nested;_raw_spin_lock_bh;native_queued_spin_lock_slowpath", Lock},
		{sys + "ksys_read;sock_read_iter;tcp_recvmsg;tcp_recvmsg_locked;sk_wait_data;wait_woken;schedule_timeout;schedule;__schedule", Sched},
		{sys + "ksys_read;vfs_read;rw_verify_area;security_file_permission", Syscall},
		// Pile-ups where interrupts come back on go to the parent frame.
		{sys + "ksys_read;sock_read_iter;tcp_recvmsg;tcp_recvmsg_locked;__tcp_transmit_skb;__ip_queue_xmit;ip_output;ip_finish_output2;__dev_queue_xmit;__local_bh_enable_ip;do_softirq.part.0;handle_softirqs;_raw_spin_unlock_irqrestore;__raw_callee_save_pvm_irq_enable;pvm_irq_enable", IPDev},
		{sys + "__x64_sys_futex;do_futex;futex_wake;wake_up_q;try_to_wake_up;_raw_spin_unlock_irqrestore;__raw_callee_save_pvm_irq_enable;pvm_irq_enable", Sched},
		{sys + "ksys_read;sock_read_iter;tcp_recvmsg;schedule;__schedule;finish_task_switch.isra.0;pvm_irq_enable", Sched},
		// An io_uring zero-copy skb freed in NET_RX kicks its submitter.
		{"asm_sysvec_apic_timer_interrupt;__irq_exit_rcu;handle_softirqs;net_rx_action;__napi_poll;process_backlog;tcp_v4_rcv;tcp_v4_do_rcv;tcp_rcv_established;tcp_ack;__kfree_skb;skb_release_data;io_tx_ubuf_complete;__io_req_task_work_add;task_work_add;kick_process;x2apic_send_IPI;pvm_write_msr", Sched},
		// ... but not across an interrupt: that is the interrupt's overhead.
		{sys + "ksys_write;sock_write_iter;tcp_sendmsg;tcp_sendmsg_locked;asm_sysvec_apic_timer_interrupt;sysvec_apic_timer_interrupt;__irq_exit_rcu;handle_softirqs;__raw_callee_save_pvm_irq_enable;pvm_irq_enable", Other},
		// zcprof's own programs, and the run-time statistics' clock reads.
		{sys + "syscall_trace_enter;__traceiter_sys_enter;__bpf_trace_sys_enter;bpf_trace_run2;bpf_prog_307d151285fb21bb_btf_sys_enter [bpf]", Tracing},
		{sys + "ksys_write;sock_write_iter;tcp_sendmsg;tcp_sendmsg_locked;bpf_trace_run4;sched_clock;kvm_sched_clock_read;pvclock_clocksource_read_nowd", Tracing},
		{StackUser, Other},
		{StackUnknown, Other},
		{"some_unknown_function;another_one", Other},
		// Module frames are matched without their tag.
		{sys + "ksys_write;sock_write_iter;veth_xmit [veth]", IPDev},
	} {
		if got := Classify(tc.stack); got != tc.want {
			leaf := tc.stack[strings.LastIndexByte(tc.stack, ';')+1:]
			t.Errorf("...%s: %s, want %s", leaf, got, tc.want)
		}
	}
}

func TestMostSpecificRule(t *testing.T) {
	c := NewClassifier([]Rule{
		{Category: Syscall, Funcs: []string{"io_*"}},
		{Category: ZcPin, Funcs: []string{"io_notif_*"}},
		{Category: Sched, Funcs: []string{"io_cqring_wait"}},
	})
	for stack, want := range map[string]string{
		"io_submit_sqes":       Syscall,
		"io_notif_tw_complete": ZcPin,
		"io_cqring_wait":       Sched,
	} {
		if got := c.Classify(stack); got != want {
			t.Errorf("%s: %s, want %s", stack, got, want)
		}
	}
}

func TestWilson(t *testing.T) {
	// Reference values (Wilson score, z = 1.96).
	for _, tc := range []struct {
		k, n   uint64
		lo, hi float64
	}{
		{50, 100, 0.4038, 0.5962},
		{0, 100, 0, 0.0370},
		{100, 100, 0.9630, 1},
		{1, 10, 0.0179, 0.4042},
	} {
		s := Wilson(tc.k, tc.n)
		if math.Abs(s.Lo-tc.lo) > 5e-4 || math.Abs(s.Hi-tc.hi) > 5e-4 {
			t.Errorf("Wilson(%d, %d) = [%.4f, %.4f], want [%.4f, %.4f]", tc.k, tc.n, s.Lo, s.Hi, tc.lo, tc.hi)
		}
	}
	if s := Wilson(0, 0); s.Lo != 0 || s.Hi != 1 {
		t.Errorf("no samples: [%v, %v], want [0, 1]", s.Lo, s.Hi)
	}
}

func TestCategoriesOf(t *testing.T) {
	cats := CategoriesOf(1_000_000, Counts{CopyTx: 600, TCPTx: 300, Other: 100})
	want := map[string]uint64{CopyTx: 600_000, TCPTx: 300_000, Other: 100_000}
	var sum uint64
	for _, c := range cats {
		if c.CPUNS != want[c.Category] || c.Exact {
			t.Errorf("%+v, want %d ns, estimate", c, want[c.Category])
		}
		// Wilson half-width for 600/1000: 0.0302.
		if c.Category == CopyTx && (c.CI95NS < 29_500 || c.CI95NS > 30_700) {
			t.Errorf("copy.tx ci95 %d ns, want about 30200", c.CI95NS)
		}
		sum += c.CPUNS
	}
	if sum != 1_000_000 || len(cats) != 3 || cats[0].Category != CopyTx {
		t.Errorf("categories %+v", cats)
	}
	if got := CategoriesOf(5000, nil); len(got) != 1 || got[0].Category != Other || got[0].CI95NS != 5000 {
		t.Errorf("unsampled time: %+v, want all of it as other ± all of it", got)
	}
	if got := CategoriesOf(0, Counts{CopyTx: 3}); got != nil {
		t.Errorf("no exact time: %+v", got)
	}
}

func TestEstimateAndFill(t *testing.T) {
	th := profiler.ThreadDelta{Info: profiler.ThreadInfo{Gen: 7, TID: 70, TGID: 70}, Counters: map[profiler.PathCtx]profiler.Counter{
		{Path: taxonomy.PathTxWrite, Ctx: taxonomy.CtxTask}:         {Calls: 10, NS: 1000},
		{Path: taxonomy.PathTxWrite, Ctx: taxonomy.CtxSoftirqNetRx}: {NS: 400},
		{Path: taxonomy.PathUser, Ctx: taxonomy.CtxSoftirqNetRx}:    {NS: 100},
		{Path: taxonomy.PathUser, Ctx: taxonomy.CtxTask}:            {NS: 5000},
	}}
	iv := profiler.Interval{Threads: []profiler.ThreadDelta{th},
		System: map[profiler.PathCtx]profiler.Counter{{Path: taxonomy.PathSysIdle, Ctx: taxonomy.CtxSoftirqNetRx}: {NS: 300}}}
	key := func(gen uint32, p taxonomy.Path, c taxonomy.Ctx) profiler.Key {
		return profiler.Key{Gen: gen, Path: p, Ctx: c}
	}
	const send = "do_syscall_64;tcp_sendmsg_locked;"
	const rx = "handle_softirqs;net_rx_action;tcp_v4_rcv;"
	s := &Samples{Counts: map[StackKey]uint64{
		{key(7, taxonomy.PathTxWrite, taxonomy.CtxTask), send + "_copy_from_iter"}:   3,
		{key(7, taxonomy.PathTxWrite, taxonomy.CtxTask), send + "tcp_write_xmit"}:    1,
		{key(7, taxonomy.PathTxWrite, taxonomy.CtxSoftirqNetRx), rx + "tcp_ack"}:     2,
		{key(7, taxonomy.PathUser, taxonomy.CtxSoftirqNetRx), rx + "skb_copy_ubufs"}: 1,
		{key(7, taxonomy.PathUser, taxonomy.CtxTask), StackUser}:                     9,
		{key(0, taxonomy.PathSysIdle, taxonomy.CtxSoftirqNetRx), rx + "tcp_ack"}:     4,
	}}
	cats := Estimate(iv, s)
	if _, ok := cats[key(7, taxonomy.PathUser, taxonomy.CtxTask)]; ok {
		t.Error("user time must not be split")
	}
	proc := profiler.ProcessEntry(70, iv.Threads, false)
	FillPaths(proc.Paths, iv.Threads, cats)
	byName := func(name string) map[string]uint64 {
		out := map[string]uint64{}
		for _, c := range findPath(proc.Paths, name).Categories {
			out[c.Category] = c.CPUNS
		}
		return out
	}
	if got := byName("tx.write"); got[CopyTx] != 750 || got[TCPTx] != 250 {
		t.Errorf("tx.write categories %v, want copy.tx 750, tcp.tx 250", got)
	}
	// softirq.net_rx merges the NET_RX time of both paths.
	if got := byName("softirq.net_rx"); got[TCPRx] != 400 || got[CopyDeferred] != 100 {
		t.Errorf("softirq.net_rx categories %v, want tcp.rx 400, copy.deferred 100", got)
	}
	sys := profiler.SystemRow(iv)
	FillSystem(sys, cats)
	if c := findPath(sys.Paths, "system.idle").Categories; len(c) != 1 || c[0].Category != TCPRx || c[0].CPUNS != 300 {
		t.Errorf("system.idle categories %+v", c)
	}
	d := &report.Document{Backends: report.Backends{Unavailable: map[string]string{"attribution": "not attached"}}}
	Annotate(d, fakeBackend{}, nil, nil)
	if d.Backends.Attribution != kernel.Sampling || d.Backends.Unavailable["attribution"] != "" || d.Backends.Unavailable["pmu"] == "" {
		t.Errorf("annotated backends %+v", d.Backends)
	}
}

type fakeBackend struct{ Backend }

func (fakeBackend) Name() string                   { return kernel.Sampling }
func (fakeBackend) Unavailable() map[string]string { return map[string]string{"pmu": "none"} }
