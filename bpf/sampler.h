/* Shared between sampler.bpf.c and the Go side (bpf2go type generation). */
#ifndef ZCPROF_SAMPLER_H
#define ZCPROF_SAMPLER_H

/* Frames kept per sample, innermost first. 64 reach the syscall entry
 * from the deepest path we know: a deferred MSG_ZEROCOPY copy runs in
 * NET_RX inside tcp_sendmsg, about 35 frames down (loopback delivery runs in
 * the do_softirq of the sender's own transmit). */
#define ZC_MAX_FRAMES 64

enum zc_sample_kind {
	ZC_SAMPLE_KERNEL = 0, /* kernel stack in ips */
	ZC_SAMPLE_USER = 1,   /* interrupted user mode: no kernel stack */
	ZC_SAMPLE_NOSTACK = 2, /* kernel mode, but the unwinder returned nothing */
	ZC_SAMPLE_REP_MOVS = 3, /* kernel stack in ips, interrupted in a rep movs */
};

/* Or-ed into zc_sample_key.kind: the sample came early (see zc_timer). */
#define ZC_SAMPLE_EARLY 0x10

/* The whole stack is part of the key: a hash map resolves collisions,
 * where a STACK_TRACE map drops (or, with BPF_F_REUSE_STACKID, overwrites)
 * a stack whose bucket is taken, which biases the shares. */
struct zc_sample_key {
	__u32 gen; /* accounting generation, 0 = system */
	__u8 path;
	__u8 ctx;
	__u8 kind;
	__u8 nframes;
	__u64 ips[ZC_MAX_FRAMES];
};

/* Phase one of two-phase sampling: every target sample's leaf (the
 * interrupted instruction), cheap to record. Only a random subsample pays
 * for the full unwind (zc_sample_key); user space estimates each
 * category's share from the leaves, with the category mix of each leaf
 * function taken from the unwound subsample (double sampling for
 * stratification). */
struct zc_leaf_key {
	__u32 gen;
	__u8 path;
	__u8 ctx;
	__u8 kind;
	__u8 early; /* 1: the sample came early (see zc_timer) */
	__u64 ip; /* 0 for user-mode samples */
};

/* Per CPU: how late the sampling hrtimer ran. cpu-clock samples are
 * delivered by an hrtimer; on bare metal a few us after it expired. On
 * virtual machines whose host delivers a guest timer late (host timer
 * slack: about 45 us on our PVM guests) but early when the guest exits to
 * the host anyway, samples bunch up at the code that exits (re-arming a
 * timer with interrupts off, for one), taking the place of the work that
 * ran when the timer fell due. Such a sample is "early": its lateness is
 * under half the CPU's usual lateness (ref, a running 75th percentile),
 * and the usual lateness is at least ZC_EARLY_MIN_REF_NS (else there is
 * no late delivery to be early against). docs/known-issues.md, "Timers
 * delivered late or early by the hypervisor". */
struct zc_timer {
	__u64 ref; /* running 75th percentile of the lateness of all samples, ns */
};

#define ZC_EARLY_MIN_REF_NS 10000

/* Counters in sampler_stats (array index). */
enum zc_sampler_stat {
	ZC_STAT_SAMPLES = 0,     /* every sample */
	ZC_STAT_SYSTEM_TASK = 1, /* non-target task context (idle, other tasks): counted only */
	ZC_STAT_DROPPED = 2,     /* samples map full */
	ZC_STAT_NOSTACK = 3,     /* bpf_get_stack failed in kernel mode */
	ZC_STAT_UNWOUND = 4,     /* target samples given a full unwind */
	ZC_STAT_SKIPPED = 5,     /* timer periods that passed without a sample */
	ZC_STAT_CROSSED = 6,     /* samples due before the running task was switched in: set aside */
	ZC_NR_STATS = 7,
};

#endif
