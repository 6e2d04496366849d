/* Shared between funcexact.bpf.c and the Go side (bpf2go type generation).
 * The function ids are part of the BPF <-> Go contract: keep
 * profiler/exact/functions.go in step. */
#ifndef ZCPROF_FUNCEXACT_H
#define ZCPROF_FUNCEXACT_H

enum zc_fx_func {
	FX_TCP_SENDMSG_LOCKED = 0,
	FX_TCP_RECVMSG_LOCKED = 1,
	FX_SKB_COPY_DATAGRAM_ITER = 2,
	FX_SIMPLE_COPY_TO_ITER = 3,
	FX_COPY_FROM_ITER = 4,
	FX_COPY_TO_ITER = 5,
	FX_SPLICE_TO_SOCKET = 6,
	FX_FILEMAP_SPLICE_READ = 7,
	FX_SKB_SPLICE_FROM_ITER = 8,
	FX_DO_SPLICE_DIRECT = 9,
	FX_SKB_ZEROCOPY_ITER_STREAM = 10,
	FX_MSG_ZEROCOPY_REALLOC = 11,
	FX_SKB_COPY_UBUFS = 12,
	FX_TCP_ZEROCOPY_RECEIVE = 13,
	FX_IO_SEND_ZC = 14,
	FX_IO_SENDMSG_ZC = 15,
	FX_NR_FUNCS = 16,
};

/* Slots of fx_counters: why a call was not measured. */
enum zc_fx_counter {
	FX_CNT_NO_FRAME = 0,   /* exit without its entry (attached mid-call, missed entry) */
	FX_CNT_OVERFLOW = 1,   /* nesting deeper than FX_DEPTH */
	FX_CNT_UNWOUND = 2,    /* frames dropped because their exit was missed */
	FX_CNT_DROPPED = 3,    /* fx_stats or fx_threads full */
	FX_CNT_MAX = 4,
};

#define FX_DEPTH 8  /* frames per stack; a power of two (masked index) */
#define FX_LEVELS 4 /* 0 = task context, 1..3 = nested softirq/hardirq */

struct zc_fx_key {
	__u32 gen;  /* thread generation (shared accounting maps), 0 = system row */
	__u8 path;  /* enum zc_path at the function's exit */
	__u8 ctx;   /* enum zc_ctx the function ran in */
	__u8 func;  /* enum zc_fx_func */
	__u8 pad;
};

struct zc_fx_val {
	__u64 calls;
	__u64 ns;       /* inclusive, with interrupts and off-CPU time removed */
	__u64 child_ns; /* part of ns spent in other traced functions it called */
	__u64 bytes;
};

struct zc_fx_frame {
	__u64 start; /* clock of the frame's context at entry */
	__u64 child; /* ns of traced callees so far */
	__u64 arg;   /* kprobe: the argument the return probe needs */
	enum zc_fx_func func; /* typed: keeps the enum in BTF for the Go side */
	__u32 pad;
};

struct zc_fx_stack {
	__u32 top;
	__u32 pad;
	struct zc_fx_frame f[FX_DEPTH];
};

/* Per target thread: a clock of its own task-context time (on CPU, not in
 * interrupts) and its stack of traced calls. */
struct zc_fx_thread {
	__u64 acc;       /* task-context ns up to on_ts */
	__u64 on_ts;     /* start of the current on-CPU segment */
	__u64 lost_mark; /* that CPU's lost_at(0) at on_ts */
	__u32 seq;       /* the CPU's switch sequence at on_ts; ~0 = off CPU */
	__u32 cpu;
	struct zc_fx_stack st;
};

/* Per CPU: interrupt nesting, interrupt time, and the stacks of traced calls
 * made inside interrupts (softirq work never migrates, and sleeps only on
 * PREEMPT_RT: zc_fx_suspended). */
struct zc_fx_cpu {
	__u64 intr_ns[FX_LEVELS];  /* wall ns spent at nesting levels deeper than each level */
	__u64 enter_ts[FX_LEVELS]; /* entry time of the interrupt at each level */
	__u64 switch_ts;           /* last sched_switch on this CPU */
	__u64 switch_lost;         /* lost_at(0) then */
	__u32 seq;                 /* bumped at each sched_switch */
	__u32 depth;               /* 0 = task context */
	__u8 ctx[FX_LEVELS];       /* enum zc_ctx of each level */
	__u32 switch_tid;          /* the task that switch brought in */
	struct zc_fx_stack st[FX_LEVELS]; /* st[0] unused: task context uses the thread's */
};

/* On PREEMPT_RT a softirq runs in a task that can be switched out inside
 * it; it resumes on the same CPU. Its open levels leave the CPU with it, by
 * tid, and come back when it is switched in (levels 1..depth as they were;
 * level 0 unused). */
struct zc_fx_suspended {
	__u64 clk[FX_LEVELS]; /* each level's clock when it was switched out */
	__u32 depth;
	__u8 ctx[FX_LEVELS];
	struct zc_fx_stack st[FX_LEVELS];
};

#endif
