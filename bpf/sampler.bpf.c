//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/* Statistical attribution: a perf_event (cpu-clock) program on every CPU
 * records the interrupted kernel stack together with what the exact
 * accounting says that CPU is doing (thread generation, path, context).
 * User space classifies the stacks and scales each context's exact time by
 * the sample shares.
 *
 * cpu_states and threads are the accounting's maps (common.h): the loader
 * passes the session's as MapReplacements. This
 * program reads them, and adds its own run time and the sample's untimed
 * cost to the CPU's probe time (zc_sample, below). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "common.h"
#include "sampler.h"

struct pt_regs___cs8 {
	unsigned long cs;
} __attribute__((preserve_access_index));

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct zc_sample_key);
	__type(value, __u64);
} samples SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct zc_leaf_key);
	__type(value, __u64);
} leaves SEC(".maps");

/* One target sample in unwind_every gets the full unwind, at random (a
 * Bernoulli subsample, so it cannot alias with periodic work). Set by the
 * loader; 1 unwinds every sample. */
volatile const __u32 unwind_every = 1;

/* The key is too large for the BPF stack: built here, one per CPU (the
 * cpu-clock hrtimer does not nest on a CPU). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct zc_sample_key);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct zc_timer);
} timers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, ZC_NR_STATS);
	__type(key, __u32);
	__type(value, __u64);
} sampler_stats SEC(".maps");

static __always_inline void count_n(__u32 stat, __u64 n) { count_at(&sampler_stats, stat, n); }

static __always_inline void count_stat(__u32 stat) { count_n(stat, 1); }

/* in_rep_movs: the interrupted instruction is a rep movs. On FSRM CPUs
 * copy_user_generic is an inline rep movsb, so a user copy runs in
 * whatever function inlined it rather than in rep_movs_alternative: on
 * 6.18 _copy_from_iter and _copy_to_iter, copy routines by name, but a
 * kernel that inlines those into their callers would name none. A rep movs
 * is interruptible and the saved ip stays on it, so its bytes tell. */
static __always_inline bool in_rep_movs(__u64 ip)
{
	__u8 b[3] = {};

	if (bpf_probe_read_kernel(b, sizeof(b), (void *)ip))
		return false;
	/* f3 a4 rep movsb, f3 a5 rep movsl, f3 48 a5 rep movsq */
	return b[0] == 0xf3 && (b[1] == 0xa4 || b[1] == 0xa5 || (b[1] == 0x48 && b[2] == 0xa5));
}

/* add counts one sample under key in a counting hash map. */
static __always_inline void add_sample(void *map, const void *key)
{
	__u64 one = 1, *v = bpf_map_lookup_elem(map, key);

	if (v) {
		__sync_fetch_and_add(v, 1);
		return;
	}
	if (bpf_map_update_elem(map, key, &one, BPF_NOEXIST)) {
		/* Raced with the other CPU creating it, or full. */
		v = bpf_map_lookup_elem(map, key);
		if (v)
			__sync_fetch_and_add(v, 1);
		else
			count_stat(ZC_STAT_DROPPED);
	}
}

/* due_of: the expiry of the cpu-clock hrtimer that called us. The ctx a
 * perf_event program gets is really the kernel's bpf_perf_event_data_kern,
 * whose event the verifier lets no field access reach: read it through
 * the ctx's address (root may pass a pointer to a helper). */
static __always_inline __u64 due_of(struct bpf_perf_event_data *ctx)
{
	struct bpf_perf_event_data_kern *kctx = (void *)ctx;
	struct perf_event *ev = BPF_CORE_READ(kctx, event);

	return ev ? BPF_CORE_READ(ev, hw.hrtimer.node.expires) : 0;
}

/* came_early measures how late the cpu-clock hrtimer that called us ran
 * (perf_swevent_hrtimer runs the overflow before it forwards the timer,
 * so the timer still holds the expiry that fired: due), counts the periods
 * that lateness skipped, updates the CPU's usual lateness and says whether
 * this sample came early (struct zc_timer). The running percentile moves
 * up three steps when above and down one when below, which settles where a
 * quarter of the values lie above. */
static __always_inline bool came_early(struct bpf_perf_event_data *ctx, __u64 due)
{
	__u32 zero = 0;
	struct zc_timer *tm;
	__s64 late;
	__u64 ref, period;

	tm = bpf_map_lookup_elem(&timers, &zero);
	if (!tm || !due)
		return false;
	late = (__s64)bpf_ktime_get_ns() - due;
	if (late < 0)
		return false;
	/* perf_swevent_hrtimer takes one sample, then forwards the timer past
	 * now: periods that fell due meanwhile (the vCPU held up by the host,
	 * interrupts off) give no sample. Count them, so that a sample total
	 * can be checked against the time it stands for. */
	period = ctx->sample_period;
	if (period && (__u64)late >= period)
		count_n(ZC_STAT_SKIPPED, (__u64)late / period);
	ref = tm->ref;
	if ((__u64)late > ref)
		tm->ref = ref + 3 * 256;
	else if (ref >= 256)
		tm->ref = ref - 256;
	return ref >= ZC_EARLY_MIN_REF_NS && 2 * (__u64)late < ref;
}

/* What a sample costs beyond this program's run (the timer interrupt, its
 * hrtimer, perf's dispatch): measured by user space before load
 * (calibrate.go, SampleDispatchNS), 0 when it could not be. */
const volatile __u64 cfg_sample_dispatch_ns = 0;

static __always_inline int sample(struct bpf_perf_event_data *ctx);

/* Timed like the feature programs, but with the sample's own untimed cost,
 * which can be tens of microseconds where interrupts are dear (PVM
 * guests): more than the span since the CPU's last event, so it is taken
 * whole (probe_take) rather than cut out of that span. */
SEC("perf_event")
int zc_sample(struct bpf_perf_event_data *ctx)
{
	__u64 t0 = probe_start();
	struct zc_cpu *c;
	int r = sample(ctx);

	c = this_cpu();
	if (c)
		probe_take(c, bpf_ktime_get_ns() - t0 + cfg_sample_dispatch_ns);
	return r;
}

static __always_inline int sample(struct bpf_perf_event_data *ctx)
{
	__u64 pt = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pt, zero = 0;
	struct zc_sample_key *k;
	struct zc_cpu *c;
	__u32 gen;
	__u8 path, cx = CTX_TASK;
	bool user;
	__u64 ip;
	__u8 kind, early;
	__u64 due = due_of(ctx);
	long n;

	count_stat(ZC_STAT_SAMPLES);
	early = came_early(ctx, due);
	c = this_cpu();
	if (!c)
		return 0;
	/* A sample due before the running task was switched in stands for
	 * time it did not run: the timer interrupt waited (interrupts off
	 * through the switch, or a vCPU the host held up) and came in after
	 * it. Under qemu's emulation a tenth of a thread's samples did, at
	 * the switch or deep in its next copy, and a sender that slept often
	 * came out with 26% more samples than its time. Set aside. */
	if (due && c->in_pid == tid && due < c->in_ts) {
		count_stat(ZC_STAT_CROSSED);
		return 0;
	}

	/* Same resolution as the accounting (and as snapshot.go's in-flight
	 * time). */
	gen = task_target(c, tid, &path);
	/* The nesting stack is valid only for the task it was built for. */
	if (c->depth && (!c->resolved || c->tid == tid))
		cx = c->stack[masked(c->depth, MAX_DEPTH - 1)];

	/* Non-target task context (the idle loop, other processes) has no
	 * exact time to scale: count it, skip the unwind (about 12 us per
	 * sample on our PVM guests, whatever the depth). */
	if (!gen && cx == CTX_TASK) {
		count_stat(ZC_STAT_SYSTEM_TASK);
		return 0;
	}
	/* The ctx allows only 8-byte loads of regs. 6.18 names the 8-byte
	 * slot csx (a union with the 16-bit cs); 6.1 has only an unsigned
	 * long cs. The flavor below reads `cs` as 8 bytes at its CO-RE offset,
	 * which is the same slot on both. */
	user = (((struct pt_regs___cs8 *)&ctx->regs)->cs & 3) != 0;
	ip = user ? 0 : PT_REGS_IP(&ctx->regs);
	kind = user ? ZC_SAMPLE_USER : in_rep_movs(ip) ? ZC_SAMPLE_REP_MOVS : ZC_SAMPLE_KERNEL;
	struct zc_leaf_key lk = {.gen = gen, .path = path, .ctx = cx, .kind = kind, .early = early, .ip = ip};
	add_sample(&leaves, &lk);
	if (unwind_every > 1 && bpf_get_prandom_u32() % unwind_every)
		return 0;
	count_stat(ZC_STAT_UNWOUND);

	k = bpf_map_lookup_elem(&scratch, &zero);
	if (!k)
		return 0;
	__builtin_memset(k, 0, sizeof(*k));
	k->gen = gen;
	k->path = path;
	k->ctx = cx;
	if (user) {
		k->kind = ZC_SAMPLE_USER;
	} else {
		n = bpf_get_stack(ctx, k->ips, sizeof(k->ips), 0);
		if (n > 0) {
			k->nframes = n / sizeof(__u64);
			k->kind = kind;
		} else {
			k->kind = ZC_SAMPLE_NOSTACK;
			count_stat(ZC_STAT_NOSTACK);
		}
	}
	if (early)
		k->kind |= ZC_SAMPLE_EARLY;
	add_sample(&samples, k);
	return 0;
}
