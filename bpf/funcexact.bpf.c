//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/* Function-exact attribution: time, calls and bytes of the key kernel
 * functions of the send and receive paths (the copy, splice, zero-copy
 * and pinning routines enum zc_fx_func in funcexact.h names), per (thread
 * generation, path, context, function).
 *
 * Time is inclusive and exact: the clock a call is measured with stops while
 * its thread is switched out, while interrupts run on top of it and while
 * zcprof's own handlers run (lost_at). A call in
 * task context uses its thread's task clock (on-CPU time minus the softirq and
 * hardirq time of the CPUs it ran on); a call inside a softirq uses the CPU's
 * clock at that nesting level minus the deeper interrupts. Calls of traced
 * functions nest (tcp_sendmsg_locked -> skb_zerocopy_iter_stream): each frame
 * also records how much of it its traced callees took (child_ns), so user
 * space gets self times that add up without double counting.
 *
 * Each function has four programs: fentry + fexit (preferred) and kprobe +
 * kretprobe (fallback). The Go side loads the pair of one function in a
 * collection of its own, so a refused function loses only itself. The clock
 * programs (sched_switch, softirq and hardirq entry/exit) exist as tp_btf and
 * raw_tp like the accounting's; one set is loaded first and owns the fx_*
 * maps the function collections share.
 *
 * The thread generation and path come from the accounting's maps
 * (cpu_states, threads, declared in common.h and replaced by the session's
 * at load time). Nothing here writes them.
 *
 * Arguments and return values of fexit programs are read with
 * bpf_get_func_arg/bpf_get_func_ret, which index by the kernel's own
 * prototype: skb_splice_from_iter, skb_zerocopy_iter_stream and
 * msg_zerocopy_realloc gained an argument after 6.12, which
 * moves the return value's slot in a BPF_PROG-style context. kprobes read
 * registers, where a trailing argument moves nothing. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "common.h"
#include "funcexact.h"

char LICENSE[] SEC("license") = "GPL";

#define TASK_DEAD 0x00000080

/* ---- own maps ---- */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct zc_fx_key);
	__type(value, struct zc_fx_val);
} fx_stats SEC(".maps");

/* A hash by tid rather than task storage: bpf_task_storage_get is not
 * offered to kprobe programs on every kernel we support. Only target
 * threads get an entry; it goes when the thread dies. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct zc_fx_thread);
} fx_threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct zc_fx_cpu);
} fx_cpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FX_CNT_MAX);
	__type(key, enum zc_fx_counter);
	__type(value, __u64);
} fx_counters SEC(".maps");

/* Softirqs switched out on PREEMPT_RT, by tid (zc_fx_suspended): at most
 * one a CPU at a time, as softirqs there hold a per-CPU lock. Preallocated:
 * filled in sched_switch, under the runqueue lock. Sized by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, struct zc_fx_suspended);
} fx_suspended SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct zc_fx_suspended);
} fx_suspend_scratch SEC(".maps");

static __always_inline void count_slot(__u32 slot, __u64 n) { count_at(&fx_counters, slot, n); }

static __always_inline struct zc_fx_cpu *fx_cpu(void) { return only_slot(&fx_cpus); }

/* ---- clocks ---- */

/* What this CPU did not spend at nesting level d, since an arbitrary
 * origin: deeper interrupts, and zcprof's own handlers at d. The
 * accounting leaves its handlers' time out of every path (probe_at); a
 * function's time leaves it out too, or a function would outlast the path
 * it ran in by as much. c is this CPU's accounting state. */
static __always_inline __u64 lost_at(struct zc_fx_cpu *fc, struct zc_cpu *c, __u32 d)
{
	__u64 lost = fc->intr_ns[masked(d, FX_LEVELS - 1)];

	if (c)
		lost += c->probe_at[masked(d, MAX_DEPTH - 1)];
	return lost;
}

/* Task-context ns of the thread's running segment, up to end, where the
 * CPU had lost lost_at(0) = lost. */
static __always_inline __u64 segment(struct zc_fx_thread *t, __u64 end, __u64 lost)
{
	__u64 wall = end > t->on_ts ? end - t->on_ts : 0;
	/* probe_at gives back an estimate's overshoot: it may step back. */
	__u64 intr = lost > t->lost_mark ? lost - t->lost_mark : 0;

	return wall > intr ? wall - intr : 0;
}

/* Brings the thread's running segment up to date: a thread not seen since
 * it was switched in on this CPU has been running since that switch, when
 * it is the task the switch brought in (else a switch was not seen: from
 * now, losing the unknown part rather than inventing time). lost is
 * lost_at(0) now. */
static __always_inline void sync_thread(struct zc_fx_thread *t, struct zc_fx_cpu *fc, __u32 tid,
					__u64 now, __u64 lost)
{
	__u32 cpu = bpf_get_smp_processor_id();

	if (t->seq == fc->seq && t->cpu == cpu)
		return;
	if (fc->switch_ts && fc->switch_ts <= now && fc->switch_tid == tid) {
		t->on_ts = fc->switch_ts;
		t->lost_mark = fc->switch_lost;
	} else {
		t->on_ts = now;
		t->lost_mark = lost;
	}
	t->seq = fc->seq;
	t->cpu = cpu;
}

/* The thread's task clock: only differences matter. */
static __always_inline __u64 task_clock(struct zc_fx_thread *t, struct zc_fx_cpu *fc, __u32 tid,
					__u64 now)
{
	__u64 lost = lost_at(fc, this_cpu(), 0);

	sync_thread(t, fc, tid, now, lost);
	return t->acc + segment(t, now, lost);
}

/* The clock of interrupt level d (> 0): wall time minus deeper interrupts
 * and zcprof's handlers at d. */
static __always_inline __u64 level_clock(struct zc_fx_cpu *fc, __u32 d, __u64 now)
{
	return now - lost_at(fc, this_cpu(), d);
}

/* An interrupt level's end, or its switch out: its wall time is lost to
 * the level below it. Only to that one: deeper levels' time is part of
 * this wall time already. */
static __always_inline void close_level(struct zc_fx_cpu *fc, __u32 d, __u64 now)
{
	__u64 start = fc->enter_ts[masked(d, FX_LEVELS - 1)];

	if (d > 0)
		fc->intr_ns[masked(d - 1, FX_LEVELS - 1)] += now > start ? now - start : 0;
}

/* A softirq's task on PREEMPT_RT: the field exists there only. */
struct task_struct___rt {
	int softirq_disable_cnt;
} __attribute__((preserve_access_index));

#define SOFTIRQ_OFFSET (1U << 8)

/* Whether prev is being switched out inside a softirq it serves, which only
 * PREEMPT_RT allows (in_serving_softirq() of that task). */
static __always_inline int in_preempted_softirq(struct task_struct *prev)
{
	struct task_struct___rt *t = (void *)prev;

	if (!bpf_core_field_exists(t->softirq_disable_cnt))
		return 0;
	return BPF_CORE_READ(t, softirq_disable_cnt) & SOFTIRQ_OFFSET;
}

/* Takes the CPU's open levels off with task tid, switched out at cut: each
 * level is closed (its time so far lost to the level below, innermost
 * first) and keeps its clock, for resume_levels to rebase its frames on. */
static __always_inline void suspend_levels(struct zc_fx_cpu *fc, __u32 tid, __u64 cut)
{
	struct zc_fx_suspended *s = only_slot(&fx_suspend_scratch);
	__u32 d = fc->depth;

	if (!s || d == 0 || d >= FX_LEVELS)
		return;
	s->depth = d;
#pragma unroll
	for (int k = FX_LEVELS - 1; k > 0; k--) {
		if (k > d)
			continue;
		s->clk[k] = level_clock(fc, k, cut);
		s->ctx[k] = fc->ctx[k];
		s->st[k] = fc->st[k];
		close_level(fc, k, cut);
	}
	if (bpf_map_update_elem(&fx_suspended, &tid, s, BPF_ANY))
		count_slot(FX_CNT_DROPPED, 1);
}

/* Puts back the levels task tid took off (suspend_levels), as it is
 * switched in at cut: reopened at cut, each frame's start moved by what
 * its level's clock advanced meanwhile. */
static __always_inline void resume_levels(struct zc_fx_cpu *fc, __u32 tid, __u64 cut)
{
	struct zc_fx_suspended *s = bpf_map_lookup_elem(&fx_suspended, &tid);
	__u32 d;

	if (!s)
		return;
	d = s->depth;
#pragma unroll
	for (int k = 1; k < FX_LEVELS; k++) {
		__u64 shift;

		if (k > d)
			continue;
		shift = level_clock(fc, k, cut) - s->clk[k];
		fc->st[k] = s->st[k];
#pragma unroll
		for (int i = 0; i < FX_DEPTH; i++)
			fc->st[k].f[i].start += shift;
		fc->ctx[k] = s->ctx[k];
		fc->enter_ts[k] = cut;
	}
	fc->depth = d < FX_LEVELS ? d : FX_LEVELS - 1;
	bpf_map_delete_elem(&fx_suspended, &tid);
}

static __always_inline int on_task_switch(__u32 prev_state, struct task_struct *prev, __u32 next_tid)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(); /* current is still prev */
	struct zc_fx_cpu *fc = fx_cpu();
	struct zc_cpu *c = this_cpu();
	__u64 now = bpf_ktime_get_ns(), cut = now, lost;
	struct zc_fx_thread *t;

	if (!fc)
		return 0;
	/* The accounting's switch program ran first and ended prev's run
	 * where the kernel did (prev's exec_start, in_ts), before the rest of
	 * the switch and the programs' own runs, which it gives to next. Cut
	 * there too, with what was lost by then, or the functions prev was
	 * inside would outlast the run the accounting gave it. */
	int at_in = c && c->in_pid == next_tid && c->in_ts && c->in_ts <= now;

	if (at_in)
		cut = c->in_ts;
	/* First, as its end would: the open softirq's time so far is not
	 * prev's task time. */
	if (fc->depth && in_preempted_softirq(prev))
		suspend_levels(fc, tid, cut);
	if (at_in)
		lost = fc->intr_ns[0] + c->in_probe_at;
	else
		lost = lost_at(fc, c, 0);
	if (tid) {
		t = bpf_map_lookup_elem(&fx_threads, &tid);
		if (t) {
			/* Its whole run since the switch-in counts, even when no
			 * traced call looked at its clock during it. */
			sync_thread(t, fc, tid, cut, lost);
			t->acc += segment(t, cut, lost);
			t->seq = ~0U;
			if (prev_state == TASK_DEAD)
				bpf_map_delete_elem(&fx_threads, &tid);
		}
	}
	fc->seq++;
	fc->switch_ts = cut;
	fc->switch_lost = lost;
	fc->switch_tid = next_tid;
	/* Elsewhere no switch comes inside an interrupt: this heals a missed
	 * exit. */
	fc->depth = 0;
	resume_levels(fc, next_tid, cut);
	return 0;
}

static __always_inline int on_intr_enter(__u8 ctx)
{
	struct zc_fx_cpu *fc = fx_cpu();
	__u64 now = bpf_ktime_get_ns();
	__u32 d, i;

	if (!fc)
		return 0;
	d = fc->depth + 1;
	if (d >= FX_LEVELS)
		d = FX_LEVELS - 1;
	fc->depth = d;
	i = masked(d, FX_LEVELS - 1);
	fc->enter_ts[i] = now;
	fc->ctx[i] = ctx;
	fc->st[i].top = 0; /* a fresh interrupt: nothing of an earlier one is open */
	return 0;
}

static __always_inline int on_intr_exit(void)
{
	struct zc_fx_cpu *fc = fx_cpu();
	__u64 now = bpf_ktime_get_ns();
	__u32 d;

	if (!fc)
		return 0;
	d = fc->depth;
	if (d == 0 || d >= FX_LEVELS)
		return 0; /* entered before we attached */
	close_level(fc, d, now);
	fc->depth = d - 1;
	return 0;
}

/* ---- call frames ---- */

struct fx_where {
	struct zc_fx_stack *st;
	__u64 clk;
	__u8 ctx;
};

/* Where a call made now is recorded, and its clock. create: make the thread
 * entry of a target that has none yet (entries only). */
static __always_inline int locate(struct fx_where *w, struct zc_fx_cpu *fc, __u64 now, int create)
{
	struct zc_fx_thread *t;
	__u32 tid, d = fc->depth;

	if (d > 0 && d < FX_LEVELS) {
		w->st = &fc->st[masked(d, FX_LEVELS - 1)];
		w->clk = level_clock(fc, d, now);
		w->ctx = fc->ctx[masked(d, FX_LEVELS - 1)];
		return 1;
	}
	tid = (__u32)bpf_get_current_pid_tgid();
	t = bpf_map_lookup_elem(&fx_threads, &tid);
	if (!t) {
		struct zc_fx_thread fresh = { .seq = ~0U };
		__u8 path;

		/* Task context of a thread that is not a target: not traced. */
		if (!create || !tid || !current_target(&path))
			return 0;
		if (bpf_map_update_elem(&fx_threads, &tid, &fresh, BPF_NOEXIST) &&
		    !bpf_map_lookup_elem(&fx_threads, &tid)) {
			count_slot(FX_CNT_DROPPED, 1);
			return 0;
		}
		t = bpf_map_lookup_elem(&fx_threads, &tid);
		if (!t)
			return 0;
	}
	w->st = &t->st;
	w->clk = task_clock(t, fc, tid, now);
	w->ctx = CTX_TASK;
	return 1;
}

static __always_inline int fx_enter(__u32 func, __u64 arg)
{
	struct zc_fx_cpu *fc = fx_cpu();
	__u64 now = bpf_ktime_get_ns();
	struct zc_fx_frame *fr;
	struct fx_where w;
	__u32 top;

	if (!fc || !locate(&w, fc, now, 1))
		return 0;
	top = w.st->top;
	if (top >= FX_DEPTH) {
		/* Only missed exits pile up this deep: start over. */
		count_slot(FX_CNT_OVERFLOW, 1);
		count_slot(FX_CNT_UNWOUND, top);
		top = 0;
	}
	fr = &w.st->f[masked(top, FX_DEPTH - 1)];
	fr->start = w.clk;
	fr->child = 0;
	fr->arg = arg;
	fr->func = func;
	w.st->top = top + 1;
	return 0;
}

/* A finished call, ready to be recorded once its bytes are known. */
struct fx_call {
	__u64 ns;
	__u64 child;
	__u64 arg; /* what the entry probe saved */
	__u8 ctx;
};

/* Pops func's frame (the topmost one: frames above it missed their exit)
 * and charges its time to its caller's frame. */
static __always_inline int fx_pop(__u32 func, struct fx_call *call)
{
	struct zc_fx_cpu *fc = fx_cpu();
	__u64 now = bpf_ktime_get_ns();
	struct zc_fx_frame *fr;
	struct fx_where w;
	__u32 top, idx;
	int found = -1;

	if (!fc || !locate(&w, fc, now, 0))
		return 0;
	top = w.st->top;
#pragma unroll
	for (int i = FX_DEPTH - 1; i >= 0; i--) {
		if (found < 0 && i < top && w.st->f[i].func == func)
			found = i;
	}
	if (found < 0) {
		count_slot(FX_CNT_NO_FRAME, 1);
		return 0;
	}
	idx = masked(found, FX_DEPTH - 1);
	if (top > idx + 1)
		count_slot(FX_CNT_UNWOUND, top - idx - 1);
	fr = &w.st->f[idx];
	call->ns = w.clk > fr->start ? w.clk - fr->start : 0;
	call->child = fr->child < call->ns ? fr->child : call->ns;
	call->arg = fr->arg;
	call->ctx = w.ctx;
	w.st->top = idx;
	if (idx > 0)
		w.st->f[masked(idx - 1, FX_DEPTH - 1)].child += call->ns;
	return 1;
}

static __always_inline void fx_record(__u32 func, struct fx_call *call, __u64 bytes)
{
	struct zc_fx_key k = { .func = func, .ctx = call->ctx };
	struct zc_fx_val *v;

	k.gen = current_target(&k.path);
	v = bpf_map_lookup_elem(&fx_stats, &k);
	if (!v) {
		struct zc_fx_val zero = {};

		bpf_map_update_elem(&fx_stats, &k, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&fx_stats, &k);
		if (!v) {
			count_slot(FX_CNT_DROPPED, 1);
			return;
		}
	}
	/* Per-CPU values: plain adds. */
	v->calls++;
	v->ns += call->ns;
	v->child_ns += call->child;
	v->bytes += bytes;
}

/* ---- bytes ---- */

static __always_inline __u64 pos_int(__u64 ret)
{
	int r = (int)ret; /* an int return leaves the upper half of rax undefined */
	return r > 0 ? r : 0;
}

static __always_inline __u64 pos_long(__u64 ret)
{
	long r = (long)ret;
	return r > 0 ? r : 0;
}

static __always_inline __u64 skb_frag_bytes(__u64 skb)
{
	return BPF_CORE_READ((struct sk_buff *)skb, data_len);
}

static __always_inline __u64 zc_length(__u64 zc)
{
	return BPF_CORE_READ((struct tcp_zerocopy_receive *)zc, length);
}

static __always_inline __u64 req_res(__u64 req)
{
	int res = BPF_CORE_READ((struct io_kiocb *)req, cqe.res);
	return res > 0 ? res : 0;
}

/* ---- fentry/fexit ---- */

static __always_inline __u64 fret(void *ctx)
{
	__u64 ret = 0;

	bpf_get_func_ret(ctx, &ret);
	return ret;
}

static __always_inline __u64 farg(void *ctx, __u32 n)
{
	__u64 v = 0;

	bpf_get_func_arg(ctx, n, &v);
	return v;
}

/* One fentry/fexit pair. BYTES is an expression of ret (the return value)
 * and ctx. */
#define FX_FPAIR(short, fn, id, BYTES)                                   \
	SEC("fentry/" #fn)                                               \
	int fe_##short(void *ctx) { return fx_enter(id, 0); }            \
	SEC("fexit/" #fn)                                                \
	int fx_##short(void *ctx)                                        \
	{                                                                \
		struct fx_call call;                                     \
		__u64 ret;                                               \
		if (!fx_pop(id, &call))                                  \
			return 0;                                        \
		ret = fret(ctx);                                         \
		fx_record(id, &call, (BYTES));                           \
		return 0;                                                \
	}

/* Returns bytes (int or ssize_t/size_t). */
FX_FPAIR(tsl, tcp_sendmsg_locked, FX_TCP_SENDMSG_LOCKED, pos_int(ret))
FX_FPAIR(trl, tcp_recvmsg_locked, FX_TCP_RECVMSG_LOCKED, pos_int(ret))
FX_FPAIR(scti, simple_copy_to_iter, FX_SIMPLE_COPY_TO_ITER, ret)
FX_FPAIR(cfi, _copy_from_iter, FX_COPY_FROM_ITER, ret)
FX_FPAIR(cti, _copy_to_iter, FX_COPY_TO_ITER, ret)
FX_FPAIR(sts, splice_to_socket, FX_SPLICE_TO_SOCKET, pos_long(ret))
FX_FPAIR(fsr, filemap_splice_read, FX_FILEMAP_SPLICE_READ, pos_long(ret))
FX_FPAIR(ssfi, skb_splice_from_iter, FX_SKB_SPLICE_FROM_ITER, pos_long(ret))
FX_FPAIR(dsd, do_splice_direct, FX_DO_SPLICE_DIRECT, pos_long(ret))
FX_FPAIR(szis, skb_zerocopy_iter_stream, FX_SKB_ZEROCOPY_ITER_STREAM, pos_int(ret))
/* Return 0 or an error: bytes from an argument. */
FX_FPAIR(scdi, skb_copy_datagram_iter, FX_SKB_COPY_DATAGRAM_ITER,
	 (int)ret == 0 ? pos_int(farg(ctx, 3)) : 0) /* (skb, offset, to, len) */
FX_FPAIR(scu, skb_copy_ubufs, FX_SKB_COPY_UBUFS,
	 (int)ret == 0 ? skb_frag_bytes(farg(ctx, 0)) : 0) /* (skb, gfp) */
FX_FPAIR(tzr, tcp_zerocopy_receive, FX_TCP_ZEROCOPY_RECEIVE,
	 (int)ret == 0 ? zc_length(farg(ctx, 1)) : 0) /* (sk, zc, tss): mapped bytes */
/* Returns the uarg, NULL on failure: (sk, size, uarg[, devmem]). */
FX_FPAIR(mzr, msg_zerocopy_realloc, FX_MSG_ZEROCOPY_REALLOC, ret ? farg(ctx, 1) : 0)
/* io_uring: the request's result holds the bytes sent. */
FX_FPAIR(isz, io_send_zc, FX_IO_SEND_ZC, (int)ret >= 0 ? req_res(farg(ctx, 0)) : 0)
FX_FPAIR(ismz, io_sendmsg_zc, FX_IO_SENDMSG_ZC, (int)ret >= 0 ? req_res(farg(ctx, 0)) : 0)

/* ---- kprobe/kretprobe ---- */

/* ARG: what the return probe needs, computed from the registers at entry;
 * BYTES: an expression of ret (rax) and arg (what ARG saved). */
#define FX_KPAIR(short, fn, id, ARG, BYTES)                              \
	SEC("kprobe/" #fn)                                               \
	int kp_##short(struct pt_regs *ctx) { return fx_enter(id, (ARG)); } \
	SEC("kretprobe/" #fn)                                            \
	int kr_##short(struct pt_regs *ctx)                              \
	{                                                                \
		struct fx_call call;                                     \
		__u64 ret, arg;                                          \
		if (!fx_pop(id, &call))                                  \
			return 0;                                        \
		ret = PT_REGS_RC(ctx);                                   \
		arg = call.arg;                                          \
		(void)arg;                                               \
		fx_record(id, &call, (BYTES));                           \
		return 0;                                                \
	}

FX_KPAIR(tsl, tcp_sendmsg_locked, FX_TCP_SENDMSG_LOCKED, 0, pos_int(ret))
FX_KPAIR(trl, tcp_recvmsg_locked, FX_TCP_RECVMSG_LOCKED, 0, pos_int(ret))
FX_KPAIR(scti, simple_copy_to_iter, FX_SIMPLE_COPY_TO_ITER, 0, ret)
FX_KPAIR(cfi, _copy_from_iter, FX_COPY_FROM_ITER, 0, ret)
FX_KPAIR(cti, _copy_to_iter, FX_COPY_TO_ITER, 0, ret)
FX_KPAIR(sts, splice_to_socket, FX_SPLICE_TO_SOCKET, 0, pos_long(ret))
FX_KPAIR(fsr, filemap_splice_read, FX_FILEMAP_SPLICE_READ, 0, pos_long(ret))
FX_KPAIR(ssfi, skb_splice_from_iter, FX_SKB_SPLICE_FROM_ITER, 0, pos_long(ret))
FX_KPAIR(dsd, do_splice_direct, FX_DO_SPLICE_DIRECT, 0, pos_long(ret))
FX_KPAIR(szis, skb_zerocopy_iter_stream, FX_SKB_ZEROCOPY_ITER_STREAM, 0, pos_int(ret))
FX_KPAIR(scdi, skb_copy_datagram_iter, FX_SKB_COPY_DATAGRAM_ITER,
	 pos_int(PT_REGS_PARM4(ctx)), (int)ret == 0 ? arg : 0)
/* skb_copy_ubufs keeps data_len: read it before the copy. */
FX_KPAIR(scu, skb_copy_ubufs, FX_SKB_COPY_UBUFS,
	 skb_frag_bytes(PT_REGS_PARM1(ctx)), (int)ret == 0 ? arg : 0)
FX_KPAIR(tzr, tcp_zerocopy_receive, FX_TCP_ZEROCOPY_RECEIVE,
	 PT_REGS_PARM2(ctx), (int)ret == 0 && arg ? zc_length(arg) : 0)
FX_KPAIR(mzr, msg_zerocopy_realloc, FX_MSG_ZEROCOPY_REALLOC, PT_REGS_PARM2(ctx), ret ? arg : 0)
FX_KPAIR(isz, io_send_zc, FX_IO_SEND_ZC, PT_REGS_PARM1(ctx),
	 (int)ret >= 0 && arg ? req_res(arg) : 0)
FX_KPAIR(ismz, io_sendmsg_zc, FX_IO_SENDMSG_ZC, PT_REGS_PARM1(ctx),
	 (int)ret >= 0 && arg ? req_res(arg) : 0)

/* ---- clock programs: tp_btf ---- */

SEC("tp_btf/sched_switch")
int BPF_PROG(fxb_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return on_task_switch(prev_state, prev, next->pid);
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(fxb_si_entry, unsigned int vec) { return on_intr_enter(softirq_ctx(vec)); }

SEC("tp_btf/softirq_exit")
int BPF_PROG(fxb_si_exit, unsigned int vec) { return on_intr_exit(); }

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(fxb_irq_entry, int irq) { return on_intr_enter(CTX_HARDIRQ); }

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(fxb_irq_exit, int irq) { return on_intr_exit(); }

/* ---- clock programs: raw_tp ---- */

SEC("raw_tp/sched_switch")
int BPF_PROG(fxr_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return on_task_switch(prev_state, prev, BPF_CORE_READ(next, pid));
}

SEC("raw_tp/softirq_entry")
int BPF_PROG(fxr_si_entry, unsigned int vec) { return on_intr_enter(softirq_ctx(vec)); }

SEC("raw_tp/softirq_exit")
int BPF_PROG(fxr_si_exit, unsigned int vec) { return on_intr_exit(); }

SEC("raw_tp/irq_handler_entry")
int BPF_PROG(fxr_irq_entry, int irq) { return on_intr_enter(CTX_HARDIRQ); }

SEC("raw_tp/irq_handler_exit")
int BPF_PROG(fxr_irq_exit, int irq) { return on_intr_exit(); }
