//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/* Exact per-thread CPU accounting.
 *
 * Every boundary event (syscall entry/exit, sched_switch, softirq and hardirq
 * entry/exit) charges the time since the previous event on this CPU to what
 * was running: (thread generation, path, context). Nothing is sampled and
 * nothing goes through a ring buffer; user space reads the per-CPU stats map.
 *
 * Each program exists twice, as tp_btf (preferred) and raw_tp (fallback);
 * the Go side loads one set. Both share the handlers below, which only use
 * BPF_CORE_READ so that the untyped raw_tp arguments work as well. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "common.h"
#include "zcb_stats.h"
#include "owner_split.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader before load. */
const volatile __u32 cfg_filter = 0;
const volatile __u32 cfg_follow_children = 0;
const volatile __u32 cfg_self_tgid = 0;
const volatile char cfg_comm[16] = {};
/* Byte classes are on: the syscall handlers note what only a syscall
 * shows (sendfile and splice sources, TCP_ZEROCOPY_RECEIVE's mapped
 * bytes) for them, instead of probes of their own on the syscalls'
 * tracepoints (which would make the kernel dispatch every syscall of
 * every task to perf). copy_splice_read's address from kallsyms, 0 if
 * unknown (then only O_DIRECT and DAX sources are recognised). */
const volatile __u32 cfg_byte_classes = 0;
const volatile __u64 cfg_copy_splice_read = 0;

/* Generations handed out here start high: user space pre-registers the
 * threads that exist at start with small generations. */
__u32 next_gen = 1 << 24;
__u64 dropped = 0;
/* Threads (and their infos) the maps refused: such a thread's time goes
 * to the SYSTEM row. Counted, so that user space says so. Any error but
 * EEXIST is a refusal: a full map gives E2BIG on 6.12 and later, but 6.1
 * refused a full preallocated map's inserts with another code. */
__u64 threads_full = 0;
__u64 thread_infos_full = 0;
#define ZC_EEXIST 17
/* Bumped by user space when it adds targets, so that every CPU re-resolves
 * its current task (a busy thread may not switch out for a long time). */
__u32 targets_epoch = 0;
/* Context switches the sched_switch tracepoint did not report (seen on our
 * VMs' patched kernel: a task became current with no event), and the
 * nanoseconds around them whose owner is estimated. */
__u64 missed_switches = 0;
/* Runs whose measured-minus-kernel difference clamp_diff() threw away (more
 * than 100 ms either way): the self-check says how many. */
__u64 clamped_runs = 0;
/* What each handler run costs before its first clock read and after its
 * last (tracepoint dispatch, the syscall slow path a sys_enter probe
 * forces, the clock reads' own edges): measured by user space once with a
 * second copy of these programs (calibrate.go), set after load. */
__u64 dispatch_ns = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 131072);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct zc_stat_key);
	__type(value, struct zc_stat_val);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct zc_spill);
} spill SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 131072);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct zc_thread_info);
} thread_infos SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} targets_tgid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} targets_tid SEC(".maps");

static const struct zc_thread blank_thread = {};

/* on_exec's copies of two entries: too large for the BPF stack. */
struct exec_scratch {
	struct zc_thread mine, other;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct exec_scratch);
} exec_copies SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_filter SEC(".maps");

#define PF_IO_WORKER 0x00000010
#define PF_KTHREAD 0x00200000
#define TASK_DEAD 0x00000080

#define O_DIRECT_FLAG 040000
#define S_DAX_FLAG (1 << 13)

#define MSG_TRUNC 0x20
#define MSG_ERRQUEUE 0x2000
#define MSG_ZEROCOPY 0x4000000
#define IPPROTO_TCP_LEVEL 6
#define TCP_ZEROCOPY_RECEIVE 35

/* x86_64 syscall numbers (this object is built for amd64 only). */
enum {
	NR_read = 0, NR_write = 1, NR_poll = 7, NR_readv = 19, NR_writev = 20,
	NR_select = 23, NR_sendfile = 40, NR_sendto = 44, NR_recvfrom = 45,
	NR_sendmsg = 46, NR_recvmsg = 47, NR_getsockopt = 55, NR_epoll_wait = 232,
	NR_pselect6 = 270, NR_ppoll = 271, NR_splice = 275, NR_tee = 276,
	NR_vmsplice = 278, NR_epoll_pwait = 281, NR_recvmmsg = 299,
	NR_sendmmsg = 307, NR_io_uring_enter = 426, NR_epoll_pwait2 = 441,
	NR_restart_syscall = 219,
};

/* The stats value under k, inserted as zero if new; NULL when refused
 * (add_stat_new keeps those counts in the spill slots). */
static __always_inline struct zc_stat_val *stat_slot(struct zc_stat_key *k)
{
	struct zc_stat_val zero = {};

	return counter_slot(&stats, k, &zero, NULL);
}

/* add_stat for a key not in the map yet: insert it, or keep the counts in
 * the spill slots when that fails. Out of line: rare, and kept out of the
 * hot code of every handler. */
static __noinline int add_stat_new(struct zc_stat_key *k, struct zc_stat_val *d)
{
	struct zc_stat_val *v = stat_slot(k);
	struct zc_spill *sp;
	__u32 zero = 0, i;

	if (v) {
		v->ns += d->ns;
		v->calls += d->calls;
		v->bytes += d->bytes;
		return 0;
	}
	sp = bpf_map_lookup_elem(&spill, &zero);
	if (!sp || sp->n >= SPILL_SLOTS) {
		__sync_fetch_and_add(&dropped, 1);
		return 0;
	}
	i = masked(sp->n, SPILL_SLOTS - 1);
	sp->key[i] = *k;
	sp->val[i] = *d;
	sp->n = i + 1;
	return 0;
}

static __always_inline void add_stat(__u32 gen, __u8 path, __u8 ctx, __u64 ns,
				     __u64 calls, __u64 bytes)
{
	struct zc_stat_key k = { .gen = gen, .path = path, .ctx = ctx };
	struct zc_stat_val *v = bpf_map_lookup_elem(&stats, &k);
	struct zc_stat_val d;

	if (v) {
		/* Per-CPU values, so plain adds; user space sums modulo 2^64,
		 * which also makes the subtraction in move_unknown() safe. */
		v->ns += ns;
		v->calls += calls;
		v->bytes += bytes;
		return;
	}
	d.ns = ns;
	d.calls = calls;
	d.bytes = bytes;
	add_stat_new(&k, &d);
}

/* Called with interrupts off (sched_switch): nothing can nest. */
static __always_inline void flush_spill(void)
{
	struct zc_spill *sp;
	__u32 zero = 0;

	sp = bpf_map_lookup_elem(&spill, &zero);
	if (!sp || !sp->n)
		return;
#pragma unroll
	for (int i = 0; i < SPILL_SLOTS; i++) {
		struct zc_stat_val *v;

		if (i >= sp->n)
			break;
		v = stat_slot(&sp->key[i]);
		if (!v)
			return; /* map full: leave them for user space */
		v->ns += sp->val[i].ns;
		v->calls += sp->val[i].calls;
		v->bytes += sp->val[i].bytes;
		/* Zeroed one by one: a later failure must not add it twice. */
		sp->val[i].ns = sp->val[i].calls = sp->val[i].bytes = 0;
	}
	sp->n = 0;
}

static __always_inline int comm_eq(const char *a)
{
#pragma unroll
	for (int i = 0; i < 16; i++) {
		if (a[i] != cfg_comm[i])
			return 0;
		if (!a[i])
			return 1;
	}
	return 1;
}

static __always_inline int is_target(struct task_struct *task, __u32 tid, __u32 tgid)
{
	if (cfg_filter & ZC_FILTER_ALL)
		return tgid != cfg_self_tgid;
	if ((cfg_filter & ZC_FILTER_TID) && bpf_map_lookup_elem(&targets_tid, &tid))
		return 1;
	if ((cfg_filter & ZC_FILTER_TGID) && bpf_map_lookup_elem(&targets_tgid, &tgid))
		return 1;
	if ((cfg_filter & ZC_FILTER_CGROUP) && bpf_current_task_under_cgroup(&cgroup_filter, 0) == 1)
		return 1;
	if (cfg_filter & ZC_FILTER_COMM) {
		char comm[16] = {};
		BPF_CORE_READ_STR_INTO(&comm, task, group_leader, comm);
		if (comm_eq(comm)) {
			/* Remember the process, so its threads and children
			 * (after exec renames them) stay targets. */
			__u8 one = 1;
			bpf_map_update_elem(&targets_tgid, &tgid, &one, BPF_ANY);
			return 1;
		}
	}
	return 0;
}

static __always_inline __u8 system_path(struct task_struct *task, __u32 tid)
{
	char comm[16];

	if (tid == 0)
		return PATH_SYS_IDLE;
	if (!(BPF_CORE_READ(task, flags) & PF_KTHREAD))
		return PATH_SYS_OTHER_TASK;
	bpf_get_current_comm(&comm, sizeof(comm));
	if (comm[0] == 'k' && comm[1] == 's' && comm[2] == 'o' && comm[3] == 'f' &&
	    comm[4] == 't' && comm[5] == 'i' && comm[6] == 'r' && comm[7] == 'q')
		return PATH_SYS_KSOFTIRQD;
	return PATH_SYS_OTHER_TASK;
}

static __always_inline struct zc_thread *create_thread(struct task_struct *task, __u32 tid,
						    __u32 tgid)
{
	struct zc_thread_info info = { .tid = tid, .tgid = tgid };
	__u32 flags = BPF_CORE_READ(task, flags), gen;
	struct zc_thread *t;
	__u8 path = PATH_UNKNOWN;
	long err;

	/* Kernel-side threads never make syscalls: their whole life is one
	 * path. io_uring workers (iou-wrk, iou-sqp) belong to the ring's owner. */
	if (flags & PF_IO_WORKER)
		path = PATH_IO_URING;
	else if (flags & PF_KTHREAD)
		path = PATH_OTHER;
	gen = __sync_fetch_and_add(&next_gen, 1);
	info.start_ns = BPF_CORE_READ(task, start_time);
	info.leader_start_ns = BPF_CORE_READ(task, group_leader, start_time);
	info.task = (__u64)task;
	info.first_runtime_ns = BPF_CORE_READ(task, se.sum_exec_runtime);
	bpf_get_current_comm(&info.comm, sizeof(info.comm));
	err = bpf_map_update_elem(&thread_infos, &gen, &info, BPF_NOEXIST);
	if (err && err != -ZC_EEXIST)
		__sync_fetch_and_add(&thread_infos_full, 1);
	/* An entry is too large for the BPF stack: inserted blank (gen 0,
	 * which every reader skips), then filled in. */
	err = bpf_map_update_elem(&threads, &tid, &blank_thread, BPF_NOEXIST);
	if (err) {
		/* No thread will ever carry this generation, so its info would
		 * never be released: the map is full, or the thread got an
		 * entry meanwhile (user space registering it, a handler on
		 * another CPU), which is the one looked up below. */
		if (err != -ZC_EEXIST)
			__sync_fetch_and_add(&threads_full, 1);
		bpf_map_delete_elem(&thread_infos, &gen);
		return bpf_map_lookup_elem(&threads, &tid);
	}
	t = bpf_map_lookup_elem(&threads, &tid);
	if (t) {
		t->tgid = tgid;
		t->path = path;
		t->gen = gen;
	}
	return t;
}

/* Learn who is current on this CPU (lazily, once per switch-in). */
static __always_inline void charge(struct zc_cpu *c, __u64 now, __u64 calls, __u64 bytes);

/* The handler time gathered on this CPU while no target was current goes
 * to the system row (a target's goes to its entry, flush_thread). */
static __always_inline void flush_probe(struct zc_cpu *c)
{
	__u64 ns = c->probe_ns, runs = c->probe_runs;

	if (!ns && !runs)
		return;
	c->probe_ns = 0;
	c->probe_runs = 0;
	add_stat(0, c->sys_path, CTX_PROBE, ns, runs, 0);
}

/* A thread's entry goes (exit, or a non-leader exec): its task-context
 * counts move to the stats map, where user space finds them from then on
 * (it reads stats before threads: a snapshot between the two may miss
 * them, never count them twice). */
static __noinline int retire_counts(struct zc_thread *t)
{
#pragma unroll
	for (int p = 0; p < NR_PATHS; p++) {
		if (t->task.p[p].calls || t->task.p[p].ns || t->task.p[p].bytes)
			add_stat(t->gen, p, CTX_TASK, t->task.p[p].ns, t->task.p[p].calls,
				 t->task.p[p].bytes);
	}
	if (t->probe.calls || t->probe.ns)
		add_stat(t->gen, PROBE_PATH, CTX_PROBE, t->probe.ns, t->probe.calls, 0);
	if (t->kdiff.calls)
		add_stat(t->gen, PROBE_PATH, CTX_KERNEL_DIFF, t->kdiff.ns, t->kdiff.calls, 0);
	return 0;
}

/* The running target's syscall state, task-context counts and handler
 * time go back to its entry (see struct zc_thread), at switch-out (with
 * the run's difference from the kernel's, kdiff over kruns runs) or before
 * its CPU state is reloaded. Counts whose entry is gone (or is another
 * generation's after a tid changed hands) go to the stats map: nothing is
 * dropped. Only the paths that hold counts are touched (pend_dirty). */
static __noinline int flush_thread(struct zc_cpu *c, __s64 kdiff, __u64 kruns)
{
	__u32 tid = c->tid, dirty = c->pend_dirty;
	struct zc_thread *t;

	if (!c->gen)
		return 0;
	settle_fd(c);
	t = bpf_map_lookup_elem(&threads, &tid);
	if (t && t->gen == c->gen) {
		__sync_fetch_and_add(&t->seq, 1);
#pragma unroll
		for (int p = 0; p < NR_PATHS; p++) {
			if (!(dirty & (1u << p)))
				continue;
			t->task.p[p].calls += c->pend.p[p].calls;
			t->task.p[p].ns += c->pend.p[p].ns;
			t->task.p[p].bytes += c->pend.p[p].bytes;
		}
		t->probe.ns += c->probe_ns;
		t->probe.calls += c->probe_runs;
		t->kdiff.ns += kdiff;
		t->kdiff.calls += kruns;
		t->path = c->path;
		t->sys = c->sys;
		__sync_fetch_and_add(&t->seq, 1);
	} else {
#pragma unroll
		for (int p = 0; p < NR_PATHS; p++) {
			if (dirty & (1u << p))
				add_stat(c->gen, p, CTX_TASK, c->pend.p[p].ns, c->pend.p[p].calls,
					 c->pend.p[p].bytes);
		}
		if (c->probe_ns || c->probe_runs)
			add_stat(c->gen, PROBE_PATH, CTX_PROBE, c->probe_ns, c->probe_runs, 0);
		if (kruns)
			add_stat(c->gen, PROBE_PATH, CTX_KERNEL_DIFF, kdiff, kruns, 0);
	}
#pragma unroll
	for (int p = 0; p < NR_PATHS; p++) {
		if (dirty & (1u << p))
			c->pend.p[p].calls = c->pend.p[p].ns = c->pend.p[p].bytes = 0;
	}
	c->pend_dirty = 0;
	c->probe_ns = 0;
	c->probe_runs = 0;
	return 0;
}

/* The task leaving this CPU (switched out, or found replaced): a target's
 * counts go back to its entry, with its run's difference from the
 * kernel's; a non-target's handler time to the system row. */
static __always_inline void flush_leaving(struct zc_cpu *c, __s64 kdiff, __u64 kruns)
{
	if (c->gen)
		flush_thread(c, kdiff, kruns);
	else
		flush_probe(c);
}

/* Another task is current than the last sched_switch announced (as next,
 * or as the task we resolved since). Cut where
 * the kernel started the current task's run (its se.exec_start, converted
 * with the CPU's clock offset), as on_switch would have. */
static __noinline int missed_switch(struct zc_cpu *c, __u32 tid, __u64 now)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 rq = task->se.exec_start, b, last = c->last_ts;

	if (!now) /* syscall handlers resolve before their clock read */
		now = bpf_ktime_get_ns();
	catch_up(c, now);
	last = c->last_ts;
	b = now;

	__sync_fetch_and_add(&missed_switches, 1);
	if (c->clk_off && rq)
		b = rq + c->clk_off;
	if (b > now)
		b = now;
	if (b < c->last_ts)
		b = c->last_ts;
	charge(c, b, 0, 0);
	/* The unreported switch happened somewhere since the last event: that
	 * window's split between the two tasks is uncertain, and so is each
	 * one's schedstat comparison by as much. */
	if (last && now > last) {
		struct zc_thread *t = bpf_map_lookup_elem(&threads, &tid);
		__u64 window = now - last;

		if (c->gen)
			add_stat(c->gen, c->path, CTX_SWITCH_UNCERTAIN, window, 1, 0);
		if (t)
			add_stat(t->gen, t->path, CTX_SWITCH_UNCERTAIN, window, 1, 0);
	}
	flush_leaving(c, 0, 0);
	c->in_pid = tid;
	c->in_ts = b;
	c->in_rq = rq;
	c->tid = tid;
	c->resolved = 0;
	c->gen = 0;
	c->owed_ns = 0;
	return 0;
}

/* Where the span before this event ends: base (the handler's untimed
 * dispatch) before its first clock read, which is when the event really
 * began. The difference becomes probe time (probe_done from the cut).
 * base is dispatch_ns at sys_enter and sys_exit, which includes the
 * syscall slow path their probes force; the interrupt and softirq hooks
 * force nothing of the kind and cut cfg_hook_dispatch_ns, a tracepoint's
 * dispatch to one program.
 *
 * dispatch_ns is calibrated as the mean over sys_enter and sys_exit, but
 * the two differ: sys_enter runs first after the syscall entry, when
 * (pti without PCID, here) the TLB is cold, and costs far more untimed
 * than sys_exit. A getppid()'s span before sys_exit is often shorter than
 * the mean, and a cut that stopped there lost the rest, which stayed in
 * the user span before the next sys_enter (30-50 ns per run, the loop's
 * user time 6-13% over its unprofiled CPU). What a cut cannot take is
 * owed, at most one estimate, and the task's next cut takes it: the
 * handlers' dispatch in all is base per run, as calibrated. */
static __always_inline __u64 dispatch_cut(struct zc_cpu *c, __u64 now, __u64 base)
{
	__u64 est = base + c->owed_ns, last;

	catch_up(c, now);
	last = c->last_ts;

	if (!last || now <= last)
		return now;
	if (now - last > est) {
		c->owed_ns = 0;
		return now - est;
	}
	est -= now - last;
	c->owed_ns = est < base ? est : base;
	return last;
}

/* Who the current task is, the first event after a switch (or after the
 * targets changed): its entry, made now if it is a new target. */
static __noinline int resolve_slow(struct zc_cpu *c, __u32 tid)
{
	struct task_struct *task;
	struct zc_thread *t;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (c->gen) {
		/* Only the targets changed: a target stays one, and its state
		 * on this CPU is newer than its entry's. */
		if (c->resolved && c->tid == tid) {
			c->epoch = targets_epoch;
			return 0;
		}
		flush_thread(c, 0, 0);
	}
	c->epoch = targets_epoch;
	c->tid = tid;
	c->resolved = 1;
	c->gen = 0;
	task = (struct task_struct *)bpf_get_current_task();
	if (tid == 0) {
		c->sys_path = PATH_SYS_IDLE;
		return 0;
	}
	t = bpf_map_lookup_elem(&threads, &tid);
	if (!t) {
		if (!is_target(task, tid, tgid)) {
			c->sys_path = system_path(task, tid);
			return 0;
		}
		t = create_thread(task, tid, tgid);
		if (!t) {
			c->sys_path = PATH_SYS_OTHER_TASK;
			return 0;
		}
	}
	/* pend_seq before gen: a reader that sees the gen sees its seq. */
	c->pend_seq = t->seq;
	asm volatile("" ::: "memory");
	c->path = t->path;
	c->sys = t->sys;
	c->gen = t->gen;
	return 0;
}

/* The current task's tid, with c's cached identity brought up to date.
 * Every handler runs this first, and most stop after it (a non-target's
 * event): the common case is a few loads and one helper call, and what
 * happens after a switch or a missed one is out of line, so that the hot
 * code stays small (on our PVM guests each page a handler touches and
 * each call it makes shows in every syscall's cost). */
static __always_inline __u32 resolve(struct zc_cpu *c, __u64 now)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	/* Whether or not the announced task was resolved yet. */
	if (c->last_ts && c->tid != tid)
		missed_switch(c, tid, now);
	if (!c->resolved || c->epoch != targets_epoch)
		resolve_slow(c, tid);
	return tid;
}

/* The span since the previous event on this CPU, claimed (last_ts moved to
 * now), or 0 when a nested handler claimed it first or this is the CPU's
 * first event (last_ts 0). */
static __always_inline __u64 claim_span(struct zc_cpu *c, __u64 now)
{
	__u64 last = c->last_ts;

	if (now > last && __sync_val_compare_and_swap(&c->last_ts, last, now) == last && last)
		return now - last;
	return 0;
}

/* Task-context counts of the CPU's running target, kept on the CPU until
 * it is switched out (flush_thread). Plain adds: a nested handler adds
 * time only, and a lost nanosecond of it is the price of no atomics. */
static __always_inline void pend_add(struct zc_cpu *c, __u8 path, __u64 ns, __u64 calls, __u64 bytes)
{
	__u32 p = masked(path, NR_PATHS - 1);
	struct zc_stat_val *v = &c->pend.p[p];

	c->pend_dirty |= 1u << p;
	v->ns += ns;
	v->calls += calls;
	v->bytes += bytes;
}

/* Charge the time since the previous event on this CPU, with the calls and
 * bytes of a syscall that ends now.
 *
 * Syscall tracepoints are preemptible since 6.x (faultable), and interrupt
 * handlers nest into any handler: another handler of this CPU (sched_switch
 * included) may run between any two of our instructions. So the owner of
 * the span is read first, and the span is claimed with a compare-and-swap:
 * if anything moved last_ts meanwhile, it charged that span itself. */
static __always_inline void charge_as(struct zc_cpu *c, __u64 now, __u32 gen, __u8 path,
				      __u64 calls, __u64 bytes)
{
	__u32 tid = c->tid;
	__u8 sys_path = c->sys_path;
	__u8 ctx = c->depth ? c->stack[masked(c->depth, MAX_DEPTH - 1)] : CTX_TASK;
	__u64 d = claim_span(c, now);

	if (ctx >= NR_CTX || (!d && !calls))
		return;
	if (gen) {
		if (ctx == CTX_TASK && gen == c->gen)
			pend_add(c, path, d, calls, bytes);
		else
			add_stat(gen, path, ctx, d, calls, bytes);
		if (path == PATH_UNKNOWN) {
			struct zc_thread *t = bpf_map_lookup_elem(&threads, &tid);
			if (t)
				t->unknown_ns[masked(ctx, 7)] += d;
		}
	} else if (ctx != CTX_TASK) {
		add_stat(0, sys_path, ctx, d, calls, 0);
	}
}

/* charge_as for the user time before a syscall of the current target. */
static __always_inline void charge_user(struct zc_cpu *c, __u64 now)
{
	if (c->depth)
		charge_as(c, now, c->gen, PATH_USER, 0, 0);
	else
		pend_add(c, PATH_USER, claim_span(c, now), 0, 0);
}

static __always_inline void charge(struct zc_cpu *c, __u64 now, __u64 calls, __u64 bytes)
{
	settle_fd(c);
	charge_as(c, now, c->gen, c->path, calls, bytes);
}

/* The first boundary of a thread tells what it was doing before: move what
 * was charged to PATH_UNKNOWN to that path. */
static __noinline int move_unknown(struct zc_cpu *c, struct zc_thread *t, __u8 to)
{
#pragma unroll
	for (int ctx = 0; ctx < NR_CTX; ctx++) {
		__u64 ns = t->unknown_ns[ctx];
		if (!ns)
			continue;
		if (ctx == CTX_TASK && t->gen == c->gen) {
			/* Modulo 2^64, summed with the entry's by user space. */
			pend_add(c, to, ns, 0, 0);
			pend_add(c, PATH_UNKNOWN, -ns, 0, 0);
		} else {
			add_stat(t->gen, to, ctx, ns, 0, 0);
			add_stat(t->gen, PATH_UNKNOWN, ctx, -ns, 0, 0);
		}
		t->unknown_ns[ctx] = 0;
	}
	return 0;
}

/* move_unknown for the current target, whose entry only this needs. */
static __noinline int move_unknown_current(struct zc_cpu *c, __u8 to)
{
	__u32 tid = c->tid;
	struct zc_thread *t = bpf_map_lookup_elem(&threads, &tid);

	if (t && t->gen == c->gen)
		move_unknown(c, t, to);
	return 0;
}

#define IORING_SETUP_SQPOLL (1U << 1)
#define IORING_SETUP_SQE128 (1U << 10)
#define IORING_SETUP_NO_SQARRAY (1U << 16)
#define IORING_ENTER_REGISTERED_RING (1U << 4)
#define IORING_OP_SENDMSG 9
#define IORING_OP_SEND 26
#define IORING_OP_SEND_ZC 47
#define IORING_OP_SENDMSG_ZC 48

/* io_uring_enter(fd, to_submit, min_complete, flags, ...) is a send when
 * the first SQE it submits is one: read from the ring as io_submit_sqes()
 * will (ctx->cached_sq_head, through sq_array unless NO_SQARRAY). A ring
 * mixing sends with other work is classified by its first SQE. Waits
 * (nothing to submit), SQPOLL rings (their thread submits) and registered
 * ring fds (an index, not an fd) are PATH_IO_URING. */
static __always_inline __u8 uring_enter_path(struct pt_regs *regs)
{
	struct file *f;
	struct io_ring_ctx *ctx;
	struct io_uring_sqe *sqes;
	__u32 *sq_array, flags, head, tail, entries, idx;
	__u8 op = 0;

	if ((regs->r10 & IORING_ENTER_REGISTERED_RING) || !(__u32)regs->si)
		return PATH_IO_URING;
	f = fd_file(regs->di);
	if (!f)
		return PATH_IO_URING;
	ctx = BPF_CORE_READ(f, private_data);
	flags = BPF_CORE_READ(ctx, flags);
	head = BPF_CORE_READ(ctx, cached_sq_head);
	tail = BPF_CORE_READ(ctx, rings, sq.tail);
	if ((flags & IORING_SETUP_SQPOLL) || head == tail)
		return PATH_IO_URING;
	entries = BPF_CORE_READ(ctx, sq_entries);
	idx = head & (entries - 1);
	if (!(flags & IORING_SETUP_NO_SQARRAY)) {
		sq_array = BPF_CORE_READ(ctx, sq_array);
		if (bpf_probe_read_kernel(&idx, sizeof(idx), &sq_array[idx]))
			return PATH_IO_URING;
	}
	if (flags & IORING_SETUP_SQE128)
		idx <<= 1;
	sqes = BPF_CORE_READ(ctx, sq_sqes);
	bpf_probe_read_kernel(&op, sizeof(op), &sqes[idx].opcode);
	switch (op) {
	case IORING_OP_SEND:
	case IORING_OP_SENDMSG:
	case IORING_OP_SEND_ZC:
	case IORING_OP_SENDMSG_ZC:
		return PATH_TX_IO_URING;
	}
	return PATH_IO_URING;
}

/* t->arg of a syscall that is part of a path's cost but not one of its
 * socket calls: counted with no call and no bytes (a pointer argument is
 * never 1). */
#define ARG_NO_CALL 1

/* Which path a syscall belongs to, from its number and arguments. The fd
 * type matters: write() to a file is not a socket send. */
/* path if fd is a TCP socket, else PATH_OTHER; on trust when check_fd is
 * given (the socket calls at sys_enter), which then holds 1 + fd for
 * settle_fd (common.h) to check later. */
static __always_inline __u8 tcp_path(long fd, __u8 path, __u32 *check_fd)
{
	if (!check_fd)
		return fd_kind(fd) == FD_TCP ? path : PATH_OTHER;
	if (fd < 0 || fd > 0xfffff)
		return PATH_OTHER; /* fd_file's range: a bad fd */
	*check_fd = fd + 1;
	return path;
}

/* A receive with MSG_TRUNC: TCP returns the bytes' count and discards
 * them without copying (tcp_recvmsg_locked). */
static __always_inline void note_trunc(struct zc_sys *t, unsigned long flags)
{
	if (flags & MSG_TRUNC)
		t->notes |= SYS_NOTE_RX_TRUNC;
}

static __always_inline __u8 classify(__u32 nr, struct pt_regs *regs, struct zc_sys *t, __u32 *check_fd)
{
	__u32 in, out;
	__u8 path;

	t->arg = 0;
	t->check_fd = 0;
	t->notes &= ~SYS_NOTE_RX_TRUNC;
	switch (nr) {
	case NR_read:
	case NR_readv:
		return tcp_path(regs->di, PATH_RX_READ, check_fd);
	case NR_recvfrom:
		note_trunc(t, regs->r10);
		return tcp_path(regs->di, PATH_RX_READ, check_fd);
	case NR_write:
	case NR_writev:
		return tcp_path(regs->di, PATH_TX_WRITE, check_fd);
	case NR_sendto:
	case NR_sendmmsg:
		path = regs->r10 & MSG_ZEROCOPY ? PATH_TX_MSG_ZEROCOPY : PATH_TX_WRITE;
		path = tcp_path(regs->di, path, check_fd);
		if (nr == NR_sendmmsg && path != PATH_OTHER)
			t->arg = regs->si; /* the mmsghdr vector, for exit_bytes */
		return path;
	case NR_sendmsg:
		path = regs->dx & MSG_ZEROCOPY ? PATH_TX_MSG_ZEROCOPY : PATH_TX_WRITE;
		return tcp_path(regs->di, path, check_fd);
	case NR_recvmsg:
		/* Reaping MSG_ZEROCOPY completions is part of that path's cost,
		 * but not a send: count it without a call. */
		if (regs->dx & MSG_ERRQUEUE) {
			path = tcp_path(regs->di, PATH_TX_MSG_ZEROCOPY, check_fd);
			if (path != PATH_OTHER)
				t->arg = ARG_NO_CALL;
			return path;
		}
		note_trunc(t, regs->dx);
		return tcp_path(regs->di, PATH_RX_READ, check_fd);
	case NR_recvmmsg:
		note_trunc(t, regs->r10);
		path = tcp_path(regs->di, PATH_RX_READ, check_fd);
		if (path != PATH_OTHER)
			t->arg = regs->si;
		return path;
	case NR_sendfile:
		return fd_kind(regs->di) == FD_TCP ? PATH_TX_SENDFILE : PATH_OTHER;
	case NR_splice:
		in = fd_kind(regs->di);
		out = fd_kind(regs->dx);
		if (out == FD_TCP)
			return PATH_TX_SPLICE;
		if (in == FD_TCP)
			return PATH_RX_SPLICE;
		if (in == FD_SOCK || out == FD_SOCK)
			return PATH_OTHER;
		/* file -> pipe feeds a splice send; pipe -> sink drains a
		 * splice receive. Their CPU is the path's, but a path's bytes
		 * and calls are the socket's: the other leg adds neither. */
		if (in == S_IFREG && out == S_IFIFO) {
			t->arg = ARG_NO_CALL;
			return PATH_TX_SPLICE;
		}
		if (in == S_IFIFO) {
			t->arg = ARG_NO_CALL;
			return PATH_RX_SPLICE;
		}
		return PATH_OTHER;
	case NR_vmsplice:
		/* user pages -> pipe: the feeding leg, as above. */
		t->arg = ARG_NO_CALL;
		return PATH_TX_SPLICE;
	case NR_io_uring_enter:
		return uring_enter_path(regs);
	case NR_getsockopt:
		if (regs->si == IPPROTO_TCP_LEVEL &&
		    regs->dx == TCP_ZEROCOPY_RECEIVE) {
			t->arg = regs->r10;
			return PATH_RX_ZEROCOPY;
		}
		return PATH_OTHER;
	case NR_poll:
	case NR_select:
	case NR_epoll_wait:
	case NR_pselect6:
	case NR_ppoll:
	case NR_epoll_pwait:
	case NR_epoll_pwait2:
		return PATH_WAIT;
	}
	return PATH_OTHER;
}

/* Mirrors struct tcp_zerocopy_receive (include/uapi/linux/tcp.h) up to the
 * fields we read. */
struct zc_receive {
	__u64 address;
	__u32 length;
	__u32 recv_skip_hint;
	__u32 inq;
	__s32 err;
	__u64 copybuf_address;
	__s32 copybuf_len;
};

/* sendmmsg and recvmmsg return how many messages they moved; each
 * message's bytes are in the msg_len the kernel wrote into the caller's
 * struct mmsghdr (a struct msghdr, 56 bytes on 64-bit, then msg_len).
 * At most UIO_MAXIOV messages per call: the kernel caps vlen there. */
#define MMSGHDR_SIZE 64
#define MMSGHDR_LEN_OFF 56
#define UIO_MAXIOV 1024

struct mmsg_sum {
	__u64 vec;
	__u64 bytes;
};

static long add_msg_len(__u64 i, void *ctx)
{
	struct mmsg_sum *m = ctx;
	__u32 len = 0;

	if (bpf_probe_read_user(&len, sizeof(len), (void *)(m->vec + i * MMSGHDR_SIZE + MMSGHDR_LEN_OFF)))
		return 1;
	m->bytes += len;
	return 0;
}

static __always_inline __u64 mmsg_bytes(__u64 vec, long msgs)
{
	struct mmsg_sum m = { .vec = vec };

	if (msgs <= 0)
		return 0;
	bpf_loop(msgs < UIO_MAXIOV ? msgs : UIO_MAXIOV, add_msg_len, &m, 0);
	return m.bytes;
}

static __always_inline __u64 exit_calls(struct zc_sys *t)
{
	return t->arg == ARG_NO_CALL ? 0 : 1;
}

/* A call a signal interrupts ends with one of these (include/linux/errno.h)
 * at sys_exit, which the user never sees: on the way out the kernel either
 * restarts it (rewinds the user's ip to the syscall instruction: the same
 * call enters again, after the handler's rt_sigreturn if one ran, or as
 * restart_syscall) or turns it into -EINTR (a handler without SA_RESTART:
 * rt_sigreturn then returns -EINTR into the interrupted call's place). One
 * call, seen by the user once either way; counting every sys_exit counted
 * a restarted recv twice (1,212 calls against the program's 1,211). */
#define ERESTARTSYS 512
#define ERESTART_RESTARTBLOCK 516
#define EINTR 4

static __always_inline bool is_restart_ret(long ret)
{
	return ret <= -ERESTARTSYS && ret >= -ERESTART_RESTARTBLOCK;
}

/* At sys_enter: the call that ended to be restarted is entered again, so
 * its calls and bytes are counted at this call's exit. */
static __always_inline void restart_entered(struct zc_sys *t, long nr)
{
	if (t->restart_nr && (nr == t->restart_nr - 1 || nr == NR_restart_syscall))
		t->restart_nr = 0;
}

/* At sys_exit of rt_sigreturn (orig_ax -1) returning -EINTR: that is the
 * interrupted call's own return (its handler had no SA_RESTART), so it is
 * counted now, as one call of its path with no time (its time was charged
 * when it ended). Any other return is the syscall number the kernel put
 * back to restart it. */
static __noinline int restart_returned(struct zc_cpu *c, __u64 now)
{
	charge_as(c, now, c->gen, c->sys.restart_path, 1, 0);
	c->sys.restart_nr = 0;
	return 0;
}

static __always_inline __u64 exit_bytes(__u32 gen, __u8 path, long ret, struct zc_sys *t)
{
	if (t->arg == ARG_NO_CALL)
		return 0;
	switch (path) {
	case PATH_TX_WRITE:
	case PATH_TX_MSG_ZEROCOPY:
		if (t->arg) /* sendmmsg */
			return mmsg_bytes(t->arg, ret);
		return ret > 0 ? ret : 0;
	case PATH_RX_READ: {
		__u64 bytes = t->arg ? mmsg_bytes(t->arg, ret) : (ret > 0 ? ret : 0); /* recvmmsg */

		/* For the byte classes: a TCP receive copies every byte it
		 * returns (skb_copy_datagram_msg) unless MSG_TRUNC discards
		 * them. Counted here, once per call, rather than by a probe on
		 * skb_copy_datagram_iovec: that fires per skb, right after the
		 * last one's copy has evicted the probe's maps from the caches
		 * (536 ns a run on our guests, the byte classes' dearest).
		 * A discard is the request's own fact, counted without the
		 * byte classes too: rx.read is otherwise taken as copied. */
		if (bytes && (t->notes & SYS_NOTE_RX_TRUNC))
			add_class(gen, PATH_RX_READ, ZCB_RX_DISCARD, bytes, 1);
		else if (cfg_byte_classes && bytes)
			add_class(gen, PATH_RX_READ, ZCB_RX_COPY, bytes, 1);
		return bytes;
	}
	case PATH_TX_SENDFILE:
	case PATH_TX_SPLICE:
	case PATH_RX_SPLICE:
		return ret > 0 ? ret : 0;
	case PATH_RX_ZEROCOPY: {
		struct zc_receive zc = {};
		if (ret != 0 || !t->arg)
			return 0;
		bpf_probe_read_user(&zc, sizeof(zc), (void *)t->arg);
		if (cfg_byte_classes && zc.length)
			add_class(gen, PATH_RX_ZEROCOPY, ZCB_RX_MAPPED, zc.length, 1);
		/* What could not be mapped, copied into the caller's copybuf. */
		if (cfg_byte_classes && zc.copybuf_len > 0)
			add_class(gen, PATH_RX_ZEROCOPY, ZCB_RX_COPY, zc.copybuf_len, 1);
		return (__u64)zc.length + (zc.copybuf_len > 0 ? zc.copybuf_len : 0);
	}
	}
	/* tx.io_uring: io_uring_enter returns SQEs consumed; bytes come from
	 * sock_send_length below. */
	return 0;
}

#define ENOSYS 38

/* A thread first seen between two boundaries (registered while running,
 * or switched in for the first time) is in PATH_UNKNOWN until its next
 * syscall entry or exit. A thread that spins in user space makes none, so
 * look at its saved user registers at any event: during a syscall the
 * entry code leaves orig_ax = syscall number and ax = -ENOSYS until the
 * syscall returns; an interrupt from user mode saves orig_ax = -1 (system
 * vectors) or the vector (device interrupts) and the user's own ax. */
static __noinline int settle_unknown_slow(struct zc_cpu *c)
{
	struct pt_regs *regs;
	struct zc_thread *t;
	__u32 tid = c->tid;
	__u8 path;
	long nr;

	t = bpf_map_lookup_elem(&threads, &tid);
	if (!t || t->gen != c->gen)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	nr = regs->orig_ax;
	if (nr >= 0 && (long)regs->ax == -ENOSYS) {
		path = classify(nr, regs, &c->sys, NULL);
	} else {
		path = PATH_USER;
	}
	move_unknown(c, t, path);
	c->path = path;
	return 0;
}

static __always_inline void settle_unknown(struct zc_cpu *c)
{
	if (c->gen && c->path == PATH_UNKNOWN)
		settle_unknown_slow(c);
}

/* vfs_splice_read reads O_DIRECT and DAX files, and filesystems without a
 * page-cache splice_read (procfs, sysfs, cifs, /dev/zero ...), through
 * copy_splice_read: into freshly allocated pages, which are then spliced.
 * The send is "spliced" but the data was not shared with the page cache. */
static __always_inline int source_cannot_splice(struct file *f)
{
	if (BPF_CORE_READ(f, f_flags) & O_DIRECT_FLAG)
		return 1;
	if (BPF_CORE_READ(f, f_inode, i_flags) & S_DAX_FLAG)
		return 1;
	return cfg_copy_splice_read &&
	       (__u64)BPF_CORE_READ(f, f_op, splice_read) == cfg_copy_splice_read;
}

/* For the byte classes: whether the source of a sendfile, or of a splice
 * from a file (file -> pipe, which the pipe -> socket splice after it
 * sends), cannot splice. vmsplice's user pages splice as they are. The
 * note stays with the thread until its next such call. */
static __noinline int note_source(long nr, struct pt_regs *regs, struct zc_sys *sys)
{
	struct file *f;

	if (nr == NR_vmsplice) {
		sys->notes &= ~SYS_NOTE_SRC_COPY;
		return 0;
	}
	f = fd_file(nr == NR_sendfile ? regs->si : regs->di);
	if (!f)
		return 0;
	if (nr == NR_splice) {
		__u32 mode = BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT;

		if (mode == S_IFIFO || mode == S_IFSOCK)
			return 0; /* the pipe -> socket leg, or a socket */
	}
	sys->notes = (sys->notes & ~SYS_NOTE_SRC_COPY) | (source_cannot_splice(f) ? SYS_NOTE_SRC_COPY : 0);
	return 0;
}

/* The syscall's saved user registers, typed: argument reads are plain
 * loads. tp_btf hands them to the program (sys_regs); raw_tp's argument
 * would need probe reads, so there the helper finds them (one more call). */
static __always_inline struct pt_regs *user_regs(struct pt_regs *sys_regs)
{
	if (sys_regs)
		return sys_regs;
	return (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
}

static __always_inline int on_sys_enter(long id, struct pt_regs *sys_regs)
{
	struct zc_cpu *c = this_cpu();
	struct pt_regs *regs;
	__u32 check_fd = 0;
	__u64 now;
	__u8 path;

	if (!c)
		return 0;
	resolve(c, 0);
	/* Most syscalls on a busy machine are not the targets': leave at once
	 * (task time of non-targets is never charged, so last_ts may stay). */
	if (!c->gen)
		return 0;
	now = dispatch_cut(c, bpf_ktime_get_ns(), dispatch_ns);
	if (c->path == PATH_UNKNOWN)
		move_unknown_current(c, PATH_USER);
	charge_user(c, now);
	if (c->sys.restart_nr)
		restart_entered(&c->sys, id);
	regs = user_regs(sys_regs);
	path = classify(id, regs, &c->sys, &check_fd);
	/* The path before the check that is due on it: a nested handler
	 * settles only a path it can see (settle_fd_slow). */
	c->path = path;
	asm volatile("" ::: "memory");
	c->sys.check_fd = check_fd;
	if (cfg_byte_classes && (path == PATH_TX_SENDFILE || path == PATH_TX_SPLICE))
		note_source(id, regs, &c->sys);
	probe_done_est(c, now, EST_SYS_ENTER + path);
	return 0;
}

/* At sys_exit, the path of a syscall that began before we saw this thread:
 * its arguments are still in the saved user registers. */
static __noinline __u8 late_path(struct zc_cpu *c, struct pt_regs *regs)
{
	__u8 path = classify(regs->orig_ax, regs, &c->sys, NULL);

	if (c->path == PATH_UNKNOWN)
		move_unknown_current(c, path);
	return path;
}

static __always_inline int on_sys_exit(long ret, struct pt_regs *sys_regs)
{
	struct zc_cpu *c = this_cpu();
	__u64 now, calls, bytes;
	struct pt_regs *regs;
	__u8 path;

	if (!c)
		return 0;
	resolve(c, 0);
	if (!c->gen)
		return 0;
	now = dispatch_cut(c, bpf_ktime_get_ns(), dispatch_ns);
	settle_fd(c);
	path = c->path;
	if (path == PATH_UNKNOWN || path == PATH_USER)
		path = late_path(c, user_regs(sys_regs));
	calls = exit_calls(&c->sys);
	bytes = exit_bytes(c->gen, path, ret, &c->sys);
	if (calls && is_restart_ret(ret)) {
		regs = user_regs(sys_regs);
		c->sys.restart_nr = (__u16)(regs->orig_ax + 1);
		c->sys.restart_path = path;
		calls = 0;
	}
	/* The syscall's time, call and bytes, on the CPU (pend). */
	charge_as(c, now, c->gen, path, calls, bytes);
	if (c->sys.restart_nr && ret == -EINTR) {
		/* rt_sigreturn's restore_sigcontext sets orig_ax to -1. */
		regs = user_regs(sys_regs);
		if ((long)regs->orig_ax == -1)
			restart_returned(c, now);
	}
	c->path = PATH_USER;
	probe_done_est(c, now, EST_SYS_EXIT + path);
	return 0;
}

/* Whether entry t is task's. Entries registered from /proc carry no task
 * (0): strict says whether those count. */
static __always_inline bool entry_of(struct zc_thread *t, struct task_struct *task, bool strict)
{
	__u32 gen = t->gen;
	struct zc_thread_info *info = bpf_map_lookup_elem(&thread_infos, &gen);

	if (!info || !info->task)
		return !strict;
	return info->task == (__u64)task;
}

/* The entry of prev, which dies, under the first of these tids whose entry
 * is prev's: the tid this CPU announced, which it normally is; then prev's
 * pid and tgid. A thread that execs while not the leader takes the
 * leader's pid (de_thread: exchange_tids) and gives it its own, possibly
 * before the leader's last switch: the leader's entry is then under its
 * tgid (before on_exec) or under its new pid (after, on_exec moved it). */
static __always_inline void finish_thread(struct task_struct *prev, __u32 tid)
{
	__u32 keys[3] = { tid, BPF_CORE_READ(prev, pid), BPF_CORE_READ(prev, tgid) };
	struct zc_thread_info *info;
	struct zc_thread *t = NULL;
	__u32 gen, key = 0;

#pragma unroll
	for (int i = 0; i < 3; i++) {
		struct zc_thread *e = bpf_map_lookup_elem(&threads, &keys[i]);

		if (e && entry_of(e, prev, i > 0)) {
			t = e;
			key = keys[i];
			break;
		}
	}
	if (!t)
		return;
	gen = t->gen;
	info = bpf_map_lookup_elem(&thread_infos, &gen);
	if (info) {
		/* update_curr() ran in __schedule before this tracepoint, so
		 * this is the thread's final runtime. */
		info->exit_runtime_ns = BPF_CORE_READ(prev, se.sum_exec_runtime);
		info->exit_utime_ns = BPF_CORE_READ(prev, utime);
		info->exit_stime_ns = BPF_CORE_READ(prev, stime);
		info->exited = 1;
	}
	retire_counts(t);
	bpf_map_delete_elem(&threads, &key);
}

/* prev's se.exec_start is the rq clock value where update_curr() last cut
 * it, normally read at the top of this __schedule: now minus that is the
 * offset between our clock and this CPU's rq clock plus a latency (that of
 * __schedule so far, or much more when the rq clock was not updated after
 * a wakeup preemption). The smallest sample is the best estimate; it may
 * rise (steal time stops the task clock), so it is let up slowly. Only the
 * cut's position depends on it: the schedstat comparison below is exact. */
static __always_inline void sample_clock_offset(struct zc_cpu *c, __u64 prev_exec_start, __u64 now)
{
	__s64 sample;

	if (!c->tid || !prev_exec_start || prev_exec_start > now)
		return;
	sample = now - prev_exec_start;
	if (!c->clk_off || sample < c->clk_off)
		c->clk_off = sample;
	else
		c->clk_off += (sample - c->clk_off) >> 10;
}

/* Where a run ends. The kernel ends prev's run where update_curr() last
 * read the rq clock for it (prev's se.exec_start) and starts next's at its
 * se.exec_start; sched_switch fires later (after pick_next_task, newidle
 * balancing included). Cut near the kernel's point, converted to our clock
 * with the CPU's offset estimate, but never before what was already
 * charged. Whatever difference remains is measured exactly per run below. */
static __always_inline __u64 run_end(struct zc_cpu *c, __u64 prev_exec_start, __u64 now)
{
	__u64 b = now;

	if (c->clk_off && c->tid && prev_exec_start)
		b = prev_exec_start + c->clk_off;
	if (b > now)
		b = now;
	if (b < c->last_ts)
		b = c->last_ts;
	return b;
}

static __always_inline __s64 clamp_diff(__s64 d)
{
	return d > 100000000LL || d < -100000000LL ? 0 : d;
}

static __always_inline int on_switch(struct task_struct *prev, __u32 prev_state,
				     __u64 prev_exec_start, __u32 next_pid, __u64 next_exec_start)
{
	struct zc_cpu *c = this_cpu();
	__u64 now = bpf_ktime_get_ns(), b, kruns = 0;
	__s64 kept = 0;

	if (!c)
		return 0;
	catch_up(c, now);
	flush_spill();
	resolve(c, now); /* current is still prev */
	settle_unknown(c);
	sample_clock_offset(c, prev_exec_start, now);
	b = run_end(c, prev_exec_start, now);
	charge(c, b, 0, 0);
	/* A run never changes CPU, so both lengths below use one clock each:
	 * ours, and this CPU's rq clock (sum_exec_runtime grows by exactly
	 * what exec_start advances). No clock conversion, no estimate. */
	if (c->gen && c->in_pid == c->tid && c->in_rq && prev_exec_start) {
		__s64 ours = b - c->in_ts, kernel = prev_exec_start - c->in_rq;

		kept = clamp_diff(ours - kernel);
		if (kept != ours - kernel)
			__sync_fetch_and_add(&clamped_runs, 1);
		kruns = 1; /* runs compared: the self-check bounds the term by them */
	}
	flush_leaving(c, kept, kruns); /* prev's; this handler's own time is next's run */
	c->in_pid = next_pid;
	c->in_ts = b;
	c->in_rq = next_exec_start;
	if (c->gen && prev_state == TASK_DEAD)
		finish_thread(prev, c->tid);
	c->tid = next_pid;
	c->resolved = 0;
	c->gen = 0;
	c->depth = 0;
	c->owed_ns = 0; /* prev's */
	c->in_probe_at = c->probe_at[0];
	probe_done_est(c, now, EST_SWITCH);
	return 0;
}

static __always_inline int on_enter_ctx(__u8 ctx)
{
	struct zc_cpu *c = this_cpu();
	__u64 now = bpf_ktime_get_ns();
	__u8 d;

	if (!c)
		return 0;
	resolve(c, now); /* dispatch_cut catches up before anything is charged */
	settle_unknown(c);
	now = dispatch_cut(c, now, cfg_hook_dispatch_ns);
	charge(c, now, 0, 0);
	/* At the interrupted level (probe_at): */
	probe_done_est(c, now, EST_CTX_ENTER + ctx);
	d = c->depth + 1;
	if (d >= MAX_DEPTH)
		d = MAX_DEPTH - 1;
	c->depth = d;
	c->stack[masked(d, MAX_DEPTH - 1)] = ctx;
	return 0;
}

static __always_inline int on_exit_ctx(__u8 ctx)
{
	struct zc_cpu *c = this_cpu();
	__u64 now = bpf_ktime_get_ns();

	if (!c)
		return 0;
	resolve(c, now);
	if (c->depth == 0) {
		/* Entered before we attached: the time since the last event
		 * was this interrupt's. */
		c->depth = 1;
		c->stack[1] = ctx;
	}
	now = dispatch_cut(c, now, cfg_hook_dispatch_ns);
	charge(c, now, 1, 0);
	if (ctx == CTX_SOFTIRQ_NET_RX)
		close_net_rx_seg(now);
	probe_done_est(c, now, EST_CTX_EXIT + ctx); /* at the interrupt's level */
	c->depth--;
	return 0;
}

static __always_inline int on_fork(struct task_struct *parent, struct task_struct *child)
{
	struct zc_cpu *c;
	__u32 child_tgid, parent_tgid;
	__u8 one = 1;

	if (!cfg_follow_children)
		return 0;
	c = this_cpu();
	if (!c)
		return 0;
	resolve(c, 0); /* current is the parent */
	if (!c->gen)
		return 0;
	child_tgid = BPF_CORE_READ(child, tgid);
	parent_tgid = BPF_CORE_READ(parent, tgid);
	if (child_tgid != parent_tgid)
		bpf_map_update_elem(&targets_tgid, &child_tgid, &one, BPF_ANY);
	return 0;
}

/* Point entry t's info at tid. */
static __always_inline void retid(struct zc_thread *t, __u32 tid)
{
	__u32 gen = t->gen;
	struct zc_thread_info *info = bpf_map_lookup_elem(&thread_infos, &gen);

	if (info)
		info->tid = tid;
}

/* A thread that execs while not the leader swaps pids with the leader
 * (de_thread: exchange_tids): its entry moves to its new pid with its
 * generation, so its counts and schedstat stay one thread. An entry found
 * under the new pid is the old leader's, whose last switch may still come:
 * it moves to the leader's new pid, where finish_thread finds it. Unless it
 * is this thread's own: one made under its new pid by an event between the
 * swap and this tracepoint (it looked like a switch); that one ends here,
 * as if the thread exited, at its live runtime (sum_exec_runtime plus the
 * run so far, through the clock offset). */
static __always_inline int on_exec(__u32 pid, __u32 old_pid)
{
	struct zc_cpu *c = this_cpu();
	struct zc_thread_info *info;
	struct zc_thread *t, *there, *mine, *other;
	struct exec_scratch *x;
	bool have_mine = false, have_other = false;
	__u32 gen, zero = 0;

	if (!c)
		return 0;
	x = bpf_map_lookup_elem(&exec_copies, &zero);
	if (!x)
		return 0;
	mine = &x->mine;
	other = &x->other;
	if (old_pid != pid) {
		struct task_struct *task = bpf_get_current_task_btf();

		/* The entries are copied below: with this CPU's counts. */
		if (c->resolved)
			flush_thread(c, 0, 0);
		t = bpf_map_lookup_elem(&threads, &old_pid);
		if (t) {
			*mine = *t;
			have_mine = true;
		}
		there = bpf_map_lookup_elem(&threads, &pid);
		if (there && !entry_of(there, task, true)) {
			*other = *there;
			have_other = true;
		} else if (there && have_mine) {
			gen = there->gen;
			info = bpf_map_lookup_elem(&thread_infos, &gen);
			if (info) {
				__u64 run = task->se.sum_exec_runtime, start = task->se.exec_start;
				__u64 now = bpf_ktime_get_ns();

				if (c->clk_off && start && now > start + c->clk_off)
					run += now - start - c->clk_off;
				info->exit_runtime_ns = run;
				info->exit_utime_ns = task->utime;
				info->exit_stime_ns = task->stime;
				info->exited = 1;
			}
			retire_counts(there);
		}
		if (have_other) {
			bpf_map_update_elem(&threads, &old_pid, other, BPF_ANY);
			retid(other, old_pid);
			if (!have_mine) /* else overwritten below */
				bpf_map_delete_elem(&threads, &pid);
		} else if (have_mine) {
			bpf_map_delete_elem(&threads, &old_pid);
		}
		if (have_mine) {
			bpf_map_update_elem(&threads, &pid, mine, BPF_ANY);
			retid(mine, pid);
		}
		if (c->tid == old_pid)
			c->tid = pid;
		if (c->in_pid == old_pid)
			c->in_pid = pid;
		if (c->tid == pid)
			c->resolved = 0; /* to the moved entry, not a closed one */
	}
	resolve(c, 0);
	if (!c->gen)
		return 0;
	gen = c->gen;
	info = bpf_map_lookup_elem(&thread_infos, &gen);
	if (info)
		bpf_get_current_comm(&info->comm, sizeof(info->comm));
	return 0;
}

static __always_inline int on_process_exit(struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);

	/* The whole process is gone (signal->live dropped to 0 before this
	 * tracepoint): its tgid may be reused by an unrelated one. Not on the
	 * leader's exit alone: a thread that execs kills the old leader and
	 * takes over its pid, and the process must stay a target. */
	if (!(cfg_filter & ZC_FILTER_ALL) && BPF_CORE_READ(task, signal, live.counter) == 0)
		bpf_map_delete_elem(&targets_tgid, &tgid);
	return 0;
}

/* Where an io_uring send runs: in io_uring_enter, in an io-wq or SQPOLL
 * thread (io_uring), or as task work on the way out of another
 * syscall or interrupt, after its sys_exit (user). In any other syscall a
 * sock_sendmsg is that syscall's own (a send on a socket that is not TCP,
 * whose syscalls are "other"). */
static __always_inline bool uring_send_context(__u8 path)
{
	return path == PATH_TX_IO_URING || path == PATH_IO_URING || path == PATH_USER;
}

/* io_uring sends never return byte counts from the syscall: take them from
 * each sock_sendmsg (6.3+). Loaded separately: optional.
 * A task-context send outside any syscall is io_uring's too: a send
 * that hit EAGAIN is retried as task work, which a ring without
 * DEFER_TASKRUN runs on the way out of whatever syscall or interrupt comes
 * next (a read, epoll_wait, a timer tick in user space); io-wq workers and
 * SQPOLL threads make no syscalls at all. The bytes go to tx.io_uring; the
 * CPU stays on the path it ran in, as no tracepoint bounds task work. */
static __always_inline int on_sock_send_length(int ret)
{
	struct zc_cpu *c = this_cpu();

	if (!c || ret <= 0)
		return 0;
	resolve(c, 0);
	if (c->gen && c->depth == 0 && uring_send_context(c->path))
		pend_add(c, PATH_TX_IO_URING, 0, 0, ret);
	return 0;
}

/* ---- programs, tp_btf and raw_tp ---- */

/* Syscall tracepoints are faultable since 6.14: their probes run with
 * preemption on, and a handler could be preempted and migrated while it
 * holds this CPU's state (seen here: a thread's identity written into the
 * state of a CPU it no longer ran on). 6.10+ lets us hold preemption off;
 * before 6.14 the tracepoint itself does. */
extern void bpf_preempt_disable(void) __ksym __weak;
extern void bpf_preempt_enable(void) __ksym __weak;

static __always_inline int sys_enter_pinned(long id, struct pt_regs *sys_regs)
{
	int ret;

	if (bpf_preempt_disable)
		bpf_preempt_disable();
	ret = on_sys_enter(id, sys_regs);
	if (bpf_preempt_enable)
		bpf_preempt_enable();
	return ret;
}

static __always_inline int sys_exit_pinned(long r, struct pt_regs *sys_regs)
{
	int ret;

	if (bpf_preempt_disable)
		bpf_preempt_disable();
	ret = on_sys_exit(r, sys_regs);
	if (bpf_preempt_enable)
		bpf_preempt_enable();
	return ret;
}

/* Each hook under both backends: tp_btf and raw_tp take the same typed
 * arguments through BPF_PROG (or PROBE_PROG), so one body serves both.
 * Only what a handler dereferences differs (raw_tp needs probe reads):
 * sched_switch and sched_process_exec are spelled out per backend. */
#define ON_BOTH(tp, name, prog, body, args...)                                  \
	SEC("tp_btf/" #tp) int prog(btf_##name, args) body                      \
	SEC("raw_tp/" #tp) int prog(raw_##name, args) body

/* tp_btf's regs argument is typed (plain loads); raw_tp's is not. */
SEC("tp_btf/sys_enter")
int BPF_PROG(btf_sys_enter, struct pt_regs *regs, long id) { return sys_enter_pinned(id, regs); }

SEC("raw_tp/sys_enter")
int BPF_PROG(raw_sys_enter, struct pt_regs *regs, long id) { return sys_enter_pinned(id, NULL); }

SEC("tp_btf/sys_exit")
int BPF_PROG(btf_sys_exit, struct pt_regs *regs, long ret) { return sys_exit_pinned(ret, regs); }

SEC("raw_tp/sys_exit")
int BPF_PROG(raw_sys_exit, struct pt_regs *regs, long ret) { return sys_exit_pinned(ret, NULL); }
ON_BOTH(softirq_entry, softirq_entry, BPF_PROG, { return on_enter_ctx(softirq_ctx(vec)); }, unsigned int vec)
ON_BOTH(softirq_exit, softirq_exit, BPF_PROG, { return on_exit_ctx(softirq_ctx(vec)); }, unsigned int vec)
ON_BOTH(irq_handler_entry, irq_entry, BPF_PROG, { return on_enter_ctx(CTX_HARDIRQ); }, int irq)
ON_BOTH(irq_handler_exit, irq_exit, BPF_PROG, { return on_exit_ctx(CTX_HARDIRQ); }, int irq)
ON_BOTH(sched_process_fork, fork, BPF_PROG, { return on_fork(parent, child); },
	struct task_struct *parent, struct task_struct *child)
ON_BOTH(sched_process_exit, exit, BPF_PROG, { return on_process_exit(task); }, struct task_struct *task)
#define SEND_LENGTH_PROG(name, args...) PROBE_PROG_EST(FEST_SEND_LENGTH, name, args)
ON_BOTH(sock_send_length, sock_send_length, SEND_LENGTH_PROG, { return on_sock_send_length(ret); },
	struct sock *sk, int ret)

SEC("tp_btf/sched_switch")
int BPF_PROG(btf_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	/* Typed arguments: plain loads. */
	return on_switch(prev, prev_state, prev->se.exec_start, next->pid, next->se.exec_start);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(raw_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return on_switch(prev, prev_state, BPF_CORE_READ(prev, se.exec_start), BPF_CORE_READ(next, pid),
			 BPF_CORE_READ(next, se.exec_start));
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(btf_exec, struct task_struct *p, pid_t old_pid) { return on_exec(p->pid, old_pid); }

SEC("raw_tp/sched_process_exec")
int BPF_PROG(raw_exec, struct task_struct *p, pid_t old_pid)
{
	return on_exec(BPF_CORE_READ(p, pid), old_pid);
}
