package attrib

// The rule table: which kernel functions mean which category (the stack
// signatures of the copy, zero-copy and softirq paths, and the stacks
// recorded in testdata/). A stack is classified by its
// innermost function that has a rule (see classify.go); functions without
// one are transparent. Patterns are exact names or globs ('*'), matched
// against names without compiler suffixes (.isra.0, .part.0, .constprop.0,
// .cold) and module tags. The most specific pattern wins: an exact name
// over any glob, then the glob with the most literal characters.
//
// Copy routines ("copy" rules) do not decide by themselves: the next known
// function above them does, with its CopyAs category if it has one (so a
// copy under tcp_sendmsg_locked is copy.tx, while tcp_sendmsg_locked's own
// time is tcp.tx). "Absorb" rules take everything beneath them (the
// deferred copy's page allocations are part of the deferred copy).

// Rule maps function names to a category.
type Rule struct {
	Category string   // category of time spent in these functions ("" for copy routines)
	CopyAs   string   // category of a copy routine called beneath them
	Copy     bool     // a copy routine: deferred to the next known caller
	Absorb   bool     // everything beneath these functions is this category
	Funcs    []string // names or globs
}

// Rules is the table, grouped by category. A pattern appears once
// (TestRulesUnique).
var Rules = []Rule{
	// Copy routines and the hardened-usercopy checks around them
	// (__check_object_size runs on every user copy). On FSRM CPUs the copy
	// is inline in _copy_*_iter; rep_movs_alternative runs elsewhere.
	{Copy: true, Funcs: []string{
		"_copy_from_iter", "_copy_to_iter", "_copy_from_iter_nocache", "_copy_from_iter_flushcache",
		"copy_from_iter_full", "copy_page_to_iter", "copy_page_from_iter", "copy_page_from_iter_atomic",
		"rep_movs_alternative", "copy_to_nontemporal", "__copy_user_nocache", "copy_user_generic*",
		"copy_user_enhanced_fast_string", "memcpy", "__memcpy", "__pi_memcpy", "memcpy_orig",
		"memmove", "__memmove", "csum_and_copy_from_iter*", "csum_and_copy_to_iter", "csum_partial_copy*",
		"memcpy_from_iter*", "copy_mc_*", "skb_copy_bits", FrameRepMovs,
		"__check_object_size", "check_heap_object", "check_stack_object", "__virt_addr_valid", "is_vmalloc_addr",
	}},

	// Send copy: under the TCP send loop.
	{Category: TCPTx, CopyAs: CopyTx, Funcs: []string{
		"tcp_sendmsg_locked", "tcp_sendmsg", "skb_do_copy_data_nocache", "tcp_send_mss", "tcp_current_mss",
		"tcp_stream_alloc_skb", "tcp_skb_entail", "tcp_build_frag", "tcp_wmem_schedule", "tcp_remove_empty_skb",
		"sk_stream_wait_memory", "tcp_rate_check_app_limited", "tcp_push", "tcp_push_one",
	}},
	// Receive copy: skb data to the user buffer.
	{Category: CopyRx, CopyAs: CopyRx, Funcs: []string{
		"skb_copy_datagram_iter", "__skb_datagram_iter", "simple_copy_to_iter", "skb_copy_and_csum_datagram*",
	}},
	{Category: TCPRx, CopyAs: CopyRx, Funcs: []string{
		"tcp_recvmsg_locked", "tcp_recvmsg", "tcp_recv_skb", "tcp_cleanup_rbuf", "__tcp_cleanup_rbuf",
		"tcp_rcv_space_adjust", "tcp_inq", "tcp_update_recv_tstamps",
	}},
	// Deferred copy of zero-copy skbs on local delivery or a packet tap,
	// including the page allocation it needs.
	{Category: CopyDeferred, CopyAs: CopyDeferred, Absorb: true, Funcs: []string{
		"skb_copy_ubufs", "skb_orphan_frags_rx", "skb_zerocopy_clone",
	}},
	// Zero-copy mechanics: pinning user pages (MSG_ZEROCOPY, SEND_ZC,
	// vmsplice), completion notifications, and mapping pages into the
	// receiver (TCP_ZEROCOPY_RECEIVE, including its TLB shootdowns).
	{Category: ZcPin, CopyAs: CopyRx, Funcs: []string{
		"tcp_zerocopy_receive", "tcp_zc_handle_leftover", "receive_fallback_to_copy",
	}},
	{Category: ZcPin, Funcs: []string{
		"zerocopy_fill_skb_from_iter", "__zerocopy_sg_from_iter", "zerocopy_sg_from_iter",
		"skb_zerocopy_iter_stream", "iov_iter_get_pages2", "iov_iter_get_pages_alloc2", "__iov_iter_get_pages_alloc",
		"iov_iter_extract_pages", "gup_fast*", "get_user_pages*", "pin_user_pages*", "__get_user_pages",
		"msg_zerocopy_realloc", "msg_zerocopy_alloc", "msg_zerocopy_complete", "__msg_zerocopy_callback",
		"msg_zerocopy_callback", "mm_account_pinned_pages", "mm_unaccount_pinned_pages", "skb_zcopy_*",
		"net_zcopy_*", "sock_omalloc", "sock_recv_errqueue", "ip_recv_error", "ipv6_recv_error",
		"io_sg_from_iter*", "io_link_skb", "io_tx_ubuf_complete", "io_notif_*", "io_alloc_notif", "io_send_zc_prep",
		"tcp_zerocopy_vm_insert_batch*", "vm_insert_pages", "insert_page*", "zap_page_range_single*",
		"tcp_zc_finalize_rx_tstamp", "can_map_frag", "find_next_mappable_frag",
	}},
	// Splice and sendfile machinery (page references, pipes).
	{Category: Splice, CopyAs: Other, Funcs: []string{
		"splice_to_socket", "skb_splice_from_iter", "skb_append_pagefrags", "do_splice", "__do_splice",
		"do_splice_direct", "splice_direct_to_actor", "direct_splice_actor", "do_sendfile", "splice_file_to_pipe",
		"do_splice_read", "splice_to_pipe", "add_to_pipe", "splice_pipe_to_pipe", "vmsplice_to_pipe",
		"iter_to_pipe", "__x64_sys_vmsplice", "__do_sys_vmsplice", "page_cache_pipe_buf_*", "user_page_pipe_buf_*",
		"generic_pipe_buf_*", "splice_*", "tcp_splice_eof", "tcp_splice_read",
		"tcp_splice_data_recv", "tcp_read_sock", "__tcp_read_sock",
		// Before 6.5 splice and sendfile reached TCP through sendpage:
		// the pipe walk, and do_tcp_sendpages appending page references
		// (skb_append_pagefrags' work, inline there).
		"__splice_from_pipe", "pipe_to_sendpage", "generic_splice_sendpage", "do_tcp_sendpages",
	}},
	// Receive splice: the linear part is copied (linear_to_page).
	{Category: Splice, CopyAs: CopyRx, Funcs: []string{
		"skb_splice_bits", "__skb_splice_bits", "spd_fill_page", "linear_to_page",
	}},
	// Page cache reads behind sendfile/splice and file I/O.
	{Category: Pagecache, CopyAs: Pagecache, Funcs: []string{
		"filemap_*", "splice_folio_into_pipe", "folio_mark_accessed", "page_cache_*", "generic_file_*",
		"generic_perform_write", "ext4_file_*", "ext4_*", "xfs_file_*", "shmem_file_*", "shmem_*", "btrfs_file_*",
		"xas_load", "xas_*", "touch_atime", "file_accessed", "readahead*", "*_readahead", "folio_wait_*",
	}},
	// TCP transmit: segmentation decisions, headers, timers, congestion control.
	{Category: TCPTx, CopyAs: TCPTx, Funcs: []string{
		"tcp_write_xmit", "__tcp_transmit_skb", "tcp_transmit_skb", "__tcp_push_pending_frames",
		"tcp_send_ack", "__tcp_send_ack", "tcp_send_delayed_ack", "tcp_event_new_data_sent", "tcp_tso_segs",
		"tcp_small_queue_check", "tcp_tsq_*", "tcp_wfree", "tcp_pace_kick", "tcp_options_write",
		"tcp_established_options", "tcp_v4_send_check", "__tcp_v4_send_check", "tcp_mtu_probe",
		"tcp_schedule_loss_probe", "tcp_chrono_*", "tcp_rate_skb_sent", "tcp_update_skb_after_send",
		"tcp_mstamp_refresh", "tcp_release_cb", "tcp_select_window", "__tcp_select_window", "tcp_init_tso_segs",
		"tcp_mss_to_mtu", "tcp_sndbuf_expand", "tcp_check_space", "tcp_new_space", "sk_stream_write_space",
		"bbr_*", "cubictcp_*", "bictcp_*", "tcp_reno_*", "tcp_cwnd_*", "tcp_set_skb_tso_segs",
		"tcp_nagle_check", "tcp_snd_wnd_test", "tcp_cwnd_test", "tcp_write_timer*", "tcp_retransmit*",
		"tcp_rearm_rto", "tcp_delack_max", "tcp_skb_collapse_tstamp", "tcp_tasklet_func", "tcp_fragment",
		"tso_fragment", "tcp_xmit_*", "tcp_sendmsg_fastopen", "tcp_sendpage*",
	}},
	// TCP receive: input processing, ACKs, queueing, wake-ups of the reader.
	{Category: TCPRx, CopyAs: TCPRx, Funcs: []string{
		"tcp_v4_rcv", "tcp_v4_do_rcv", "tcp_v6_rcv", "tcp_v6_do_rcv", "tcp_rcv_established", "tcp_rcv_state_process",
		"tcp_data_queue", "tcp_ack", "tcp_clean_rtx_queue*", "tcp_event_data_recv", "tcp_queue_rcv",
		"tcp_add_backlog", "tcp_validate_incoming", "__tcp_ack_snd_check", "tcp_ack_snd_check", "tcp_ack_update_rtt",
		"tcp_try_coalesce", "tcp_data_ready", "tcp_grow_window", "tcp_measure_rcv_mss", "tcp_try_rmem_schedule",
		"tcp_urg", "tcp_sack*", "tcp_rate_gen", "tcp_cong_control", "tcp_update_pacing_rate", "tcp_ack_tstamp",
		"tcp_inbound_hash", "tcp_filter", "tcp_v4_fill_cb", "tcp_rcv_rtt_*", "tcp_ofo_queue", "tcp_prune_*",
		"tcp_collapse*", "tcp_data_snd_check", "tcp_fast_path_check", "tcp_parse_options", "tcp_fastretrans_alert",
		"tcp_process_tlp_ack", "tcp_in_ack_event", "tcp_newly_delivered", "tcp_rack_*", "tcp_skb_can_collapse*",
		"tcp_check_sack_reordering", "tcp_ecn_*", "tcp_enter_quickack_mode", "tcp_incr_quickack",
		"tcp_gro_receive", "tcp4_gro_receive", "tcp_gro_complete", "tcp4_gro_complete", "tcp_recvmsg_*",
		"tcp_leave_memory_pressure", "__inet_lookup_established", "__inet_lookup*", "inet_ehashfn",
		"sock_def_readable", "sk_data_ready", "tcp_v4_early_demux", "skb_try_coalesce", "tcp_stream_memory_free",
		"tcp_poll", "sock_rfree", "tcp_rbtree_insert", "skb_shift", "tcp_shifted_skb", "tcp_shift_skb_data",
	}},
	// IP and device layers, both directions: output, qdisc, loopback/veth
	// xmit, GSO, backlog and NAPI processing, IP input and routing.
	{Category: IPDev, CopyAs: IPDev, Funcs: []string{
		"ip_output", "ip_finish_output*", "__ip_finish_output", "__ip_queue_xmit", "ip_queue_xmit", "ip_local_out",
		"__ip_local_out", "ip_send_check", "ip_skb_dst_mtu", "ipv4_mtu", "__sk_dst_check", "ipv4_dst_check",
		"dst_release", "__dev_queue_xmit", "dev_queue_xmit*", "dev_hard_start_xmit", "loopback_xmit", "veth_xmit",
		"veth_*", "validate_xmit_skb*", "__skb_gso_segment", "skb_mac_gso_segment", "inet_gso_segment",
		"tcp_gso_segment", "tcp4_gso_segment", "skb_segment", "netif_skb_features", "skb_network_protocol",
		"skb_csum_hwoffload_help", "sch_direct_xmit", "qdisc_*", "__qdisc_*", "pfifo_fast_*", "fq_codel_*",
		"__dev_xmit_skb", "dev_qdisc_*", "netif_rx", "netif_rx_internal", "__netif_rx", "enqueue_to_backlog",
		"net_rx_action", "net_tx_action", "__napi_poll", "napi_*", "process_backlog", "__netif_receive_skb*",
		"netif_receive_skb*", "ip_rcv", "ip_rcv_core", "ip_rcv_finish*", "ip_local_deliver",
		"ip_local_deliver_finish", "ip_protocol_deliver_rcu", "raw_local_deliver", "ip_sublist_rcv*",
		"ip_list_rcv*", "ip_route_*", "fib_*", "eth_type_trans", "skb_defer_free_flush", "gro_*", "dev_gro_receive",
		"inet_gro_receive", "nf_hook_slow", "nf_*", "ipv6_*", "ip6_*", "sk_filter_trim_cap", "__xfrm_policy_check*",
		"security_sock_rcv_skb", "dev_xmit_recursion*", "skb_condense", "rps_*", "__netif_schedule",
	}},
	// skb and memory allocation and freeing, socket memory accounting.
	{Category: SkbMem, CopyAs: SkbMem, Funcs: []string{
		"__alloc_skb", "alloc_skb*", "__napi_alloc_skb", "napi_alloc_skb", "kmalloc_reserve", "kmem_cache_*",
		"__kmem_cache_*", "kmalloc*", "__kmalloc*", "kfree", "kfree_skb*", "__kfree_skb*", "kfree_skbmem",
		"consume_skb", "napi_consume_skb", "sk_skb_reason_drop", "skb_release_*", "skb_free_head", "skb_attempt_defer_free",
		"__slab_*", "___slab_alloc", "slab_*", "allocate_slab", "put_cpu_partial", "__put_partials",
		"alloc_pages*", "__alloc_pages*", "__alloc_frozen_pages*", "get_page_from_freelist", "rmqueue*", "__rmqueue*",
		"free_unref_*", "__free_pages*", "__free_frozen_pages", "free_frozen_page*", "free_pcppages_bulk",
		"free_pages", "free_pages_and_swap_cache", "__folio_put", "folio_put", "folios_put_refs", "put_page", "get_netmem", "put_netmem",
		"skb_page_frag_refill", "sk_page_frag_refill", "page_frag_*", "skb_clone", "__skb_clone", "__copy_skb_header",
		"pskb_expand_head", "skb_split", "sk_mem_*", "__sk_mem_*", "sk_wmem_schedule", "sock_wfree", "__sock_wfree",
		"mem_cgroup_*", "__memcg_*", "memcg_*", "obj_cgroup_*", "refill_obj_stock", "consume_obj_stock",
		"__get_pfnblock_flags_mask", "get_pfnblock_*", "policy_nodemask", "sk_free", "__sk_free", "skb_orphan",
		"__tlb_remove_folio_pages", "__tlb_batch_free_encoded_pages", "skb_ext_*",
	}},
	// Scheduling: blocking, wake-ups, context switches.
	{Category: Sched, CopyAs: Sched, Funcs: []string{
		"schedule", "__schedule", "schedule_timeout", "schedule_hrtimeout*", "schedule_idle", "finish_task_switch",
		"__cond_resched", "try_to_wake_up", "__wake_up*", "wake_up_*", "autoremove_wake_function",
		"default_wake_function", "woken_wake_function", "wait_woken", "sk_wait_data", "sk_wait_event", "prepare_to_wait*",
		"finish_wait", "pick_next_task*", "__pick_next_task", "enqueue_task*", "dequeue_task*", "enqueue_entity",
		"dequeue_entity", "update_curr*", "ttwu_*", "select_task_rq*", "psi_*", "update_load_avg", "__update_load_avg*",
		"resched_curr*", "check_preempt*", "wakeup_preempt*", "context_switch", "__switch_to*", "switch_mm*",
		"prepare_task_switch", "raw_spin_rq_*", "sched_*", "set_next_entity", "put_prev_*", "sched_balance_*",
		"newidle_balance", "update_rq_clock*", "hrtick_*", "io_cqring_wait", "futex_*", "__futex_*", "do_futex",
		"ep_poll*", "do_epoll_wait", "do_sys_poll", "do_poll", "sock_poll", "io_schedule*",
		"update_cfs_*", "reweight_*", "place_entity", "__enqueue_entity", "__dequeue_entity", "pick_eevdf",
		// Waking an io_uring task to post a completion: in NET_RX, freeing
		// an io_uring zero-copy skb queues its notification and kicks the
		// submitter with an IPI (a VM exit on PVM guests).
		"__io_req_task_work_add", "io_req_task_work_add*", "io_req_local_work_add", "io_req_normal_work_add",
		"task_work_add", "kick_process",
	}},
	// Locks: socket lock, spinlocks and their slow paths.
	{Category: Lock, CopyAs: Lock, Funcs: []string{
		"lock_sock_nested", "__lock_sock", "lock_sock_fast", "release_sock", "__release_sock",
		"_raw_spin_lock*", "_raw_spin_unlock", "_raw_spin_unlock_bh", "_raw_spin_trylock*", "_raw_read_lock*",
		"_raw_write_lock*", "_raw_read_unlock", "_raw_write_unlock", "queued_spin_lock_slowpath",
		"native_queued_spin_lock_slowpath", "__pv_queued_spin_lock_slowpath", "pv_queued_spin_lock_slowpath",
		"mutex_lock*", "mutex_unlock*", "__mutex_*", "down_read*", "down_write*", "up_read", "up_write",
		"rwsem_*", "__rwsem_*", "lock_timer_base", "osq_*", "queued_read_lock_slowpath", "queued_write_lock_slowpath",
	}},
	// Syscall entry and exit, the socket and VFS layers above the protocol,
	// security hooks, fd lookup, argument copies, io_uring submission.
	{Category: Syscall, CopyAs: Syscall, Funcs: []string{
		"entry_SYSCALL_64*", "do_syscall_64", "x64_sys_call", "syscall_*", "exit_to_user_mode*",
		"irqentry_exit_to_user_mode", "arch_exit_to_user_mode_prepare", "__x64_sys_*", "__do_sys_*", "__se_sys_*",
		"ksys_*", "vfs_read", "vfs_write", "vfs_readv", "vfs_writev", "do_iter_*", "sock_read_iter", "sock_write_iter",
		"sock_recvmsg", "sock_sendmsg", "__sock_sendmsg", "sock_recvmsg_nosec", "inet_sendmsg", "inet_recvmsg",
		"inet_send_prepare", "__sys_sendto", "__sys_recvfrom", "____sys_sendmsg", "___sys_sendmsg", "__sys_sendmsg",
		"____sys_recvmsg", "___sys_recvmsg", "__sys_recvmsg", "__sys_getsockopt", "do_sock_getsockopt",
		"tcp_getsockopt", "do_tcp_getsockopt", "sock_getsockopt", "__sys_setsockopt", "security_*", "apparmor_*",
		"selinux_*", "bpf_lsm_*", "fdget*", "__fdget*", "fget*", "__fget*", "fput", "rw_verify_area", "import_iovec",
		"__import_iovec", "import_ubuf", "_copy_from_user", "_copy_to_user", "copy_msghdr_from_user",
		"__copy_msghdr", "move_addr_to_kernel", "move_addr_to_user", "sockfd_lookup_light", "copy_to_sockptr*",
		"__get_user_*", "__put_user_*", "__rseq_handle_notify_resume", "rseq_*", "fpregs_*", "switch_fpu_*",
		"restore_fpregs_from_fpstate",
		"io_*", "__io_*", "tctx_task_work*", "task_work_run", "arch_do_signal_or_restart", "get_signal", "x64_setup_rt_frame",
		"restore_sigcontext", "do_signal", "copy_fpstate_to_sigframe", "get_sigframe", "signal_setup_done",
		"rw_copy_check_uvector", "iov_iter_advance", "iov_iter_init",
	}},
	// Tracepoint handlers and BPF programs (zcprof's own and any other
	// tracer's), with the helpers, maps and clocks they use.
	{Category: Tracing, CopyAs: Tracing, Funcs: []string{
		"bpf_prog_*", "bpf_trace_run*", "__bpf_trace_*", "__traceiter_*", "bpf_*", "__htab_*", "htab_*",
		"lookup_nulls_elem_raw", "pvclock_clocksource_read*", "kvm_clock_*", "kvm_sched_clock_read",
		"ktime_get_mono_fast_ns", "call_trace_*", "copy_from_kernel_nofault", "task_init_private_helper_slot",
		"trace_call_bpf", "perf_trace_*", "trace_event_*",
	}},
}
