/* Shared between accounting.bpf.c and the Go loader (via bpf2go's type
 * generation). Values are part of the BPF <-> Go contract: keep the Go
 * constants in profiler/taxonomy/taxonomy.go in step. */
#ifndef ZCPROF_ACCOUNTING_H
#define ZCPROF_ACCOUNTING_H

/* Paths: what the thread's base context was doing when time was spent. */
enum zc_path {
	PATH_USER = 0,
	PATH_TX_WRITE = 1,
	PATH_TX_MSG_ZEROCOPY = 2,
	PATH_TX_SENDFILE = 3,
	PATH_TX_SPLICE = 4,
	PATH_TX_IO_URING = 5,
	PATH_RX_READ = 6,
	PATH_RX_ZEROCOPY = 7,
	PATH_RX_SPLICE = 8,
	PATH_WAIT = 9,
	PATH_OTHER = 10,
	/* Thread seen first between two boundaries: charged here, then moved to
	 * the real path at its first syscall entry or exit. */
	PATH_UNKNOWN = 11,
	/* System row (gen 0): interrupts that ran while no target was current. */
	PATH_SYS_IDLE = 12,
	PATH_SYS_KSOFTIRQD = 13,
	PATH_SYS_OTHER_TASK = 14,
	/* io_uring_enter calls whose first submitted SQE is not a socket send
	 * (receives, file I/O, waits) and io-wq/SQPOLL threads: ring work
	 * whose kind is not known. Socket sends from a ring are tx.io_uring. */
	PATH_IO_URING = 15,
	NR_PATHS = 16,
};

/* Contexts: what kind of execution the time was. */
enum zc_ctx {
	CTX_TASK = 0,
	CTX_SOFTIRQ_NET_RX = 1,
	CTX_SOFTIRQ_NET_TX = 2,
	CTX_SOFTIRQ_OTHER = 3,
	CTX_HARDIRQ = 4,
	NR_CTX = 5,
	/* Not on-CPU time: per run of a thread, the time we measured minus
	 * what the kernel added to its sum_exec_runtime (signed, modulo 2^64).
	 * The kernel cuts its runs where it last read the rq clock, which
	 * after a wakeup preemption is the wakeup itself (rq_clock_skip_update):
	 * the rest of the waker's run is billed to the woken task. Kept apart
	 * so the schedstat self-check compares like with like. */
	CTX_KERNEL_DIFF = 5,
	/* Not on-CPU time either: windows around context switches that
	 * sched_switch did not report (see missed_switch), per thread. */
	CTX_SWITCH_UNCERTAIN = 6,
	/* zcprof's own handlers: from each handler's first clock read to its
	 * last, cut out of whatever context the thread was in. On-CPU time
	 * of the thread (schedstat bills it), but not the workload's. Kept
	 * per thread (path PROBE_PATH), calls = handler runs timed. */
	CTX_PROBE = 7,
};

/* Probe time is per thread, not per path: one key. */
#define PROBE_PATH PATH_OTHER

/* Target filters, ORed in cfg_filter. */
enum zc_filter {
	ZC_FILTER_ALL = 1,
	ZC_FILTER_TGID = 2,   /* tgid in targets_tgid */
	ZC_FILTER_TID = 4,    /* tid in targets_tid (zcprof run's own threads) */
	ZC_FILTER_CGROUP = 8, /* current task under cgroup_filter[0] (cgroup v2) */
	ZC_FILTER_COMM = 16,  /* group leader's comm == cfg_comm */
};

#define MAX_DEPTH 4

struct zc_stat_key {
	__u32 gen;  /* thread generation, 0 = system row */
	__u8 path;
	__u8 ctx;
	__u16 pad;
};

struct zc_stat_val {
	__u64 calls; /* completed syscalls (CTX_TASK) or interrupt entries */
	__u64 ns;
	__u64 bytes; /* syscall return values on socket paths */
};

/* Counts add_stat could not insert: a new key's insertion fails with
 * -EBUSY when it interrupts another update of the same hash bucket on this
 * CPU (htab's recursion guard; syscall tracepoints are preemptible, and
 * interrupt handlers nest), or -ENOMEM when the BPF allocator's per-CPU
 * cache is empty at that moment (it refills asynchronously). A burst of new
 * threads still overflows 32 at times (docs/known-issues.md).
 * Flushed at the next sched_switch, read by user space too. */
#define SPILL_SLOTS 32

struct zc_spill {
	__u32 n;
	__u32 pad;
	struct zc_stat_key key[SPILL_SLOTS];
	struct zc_stat_val val[SPILL_SLOTS];
};

/* (path, CTX_TASK) counts of one thread, by path. */
struct zc_path_counts {
	struct zc_stat_val p[NR_PATHS];
};

/* A syscall under way, as sys_exit needs it from sys_enter: on the CPU
 * (zc_cpu.sys) while the thread runs, in its entry while it does not. */
struct zc_sys {
	__u64 arg;         /* per-syscall scratch: TCP_ZEROCOPY_RECEIVE optval, mmsghdr vector */
	__u16 restart_nr;  /* 1 + nr of a call that ended to be restarted, else 0 */
	__u8 restart_path; /* path of the call in restart_nr */
	__u8 notes;        /* SYS_NOTE_* */
	/* 1 + the fd whose kind decides the current call's path, taken on
	 * trust at sys_enter (settle_fd in common.h), else 0. */
	__u32 check_fd;
};

/* zc_sys.notes. SRC_COPY: the last sendfile or splice source cannot
 * splice (byte classes), its pages were copied before they were spliced;
 * kept until the thread's next such call. RX_TRUNC: the current receive
 * call passed MSG_TRUNC, so TCP discards what it returns uncopied. */
#define SYS_NOTE_SRC_COPY 1
#define SYS_NOTE_RX_TRUNC 2

/* Per thread, keyed by tid. Deleted when the thread is switched out dead, so
 * a reused tid gets a fresh generation.
 *
 * While the thread runs, its CPU keeps its path, its syscall state and its
 * task-context counts (zc_cpu.path, sys, pend): the syscall handlers, the
 * most frequent events, then touch no hash map. Switching it out writes
 * them back here (flush_thread), seq odd while it does; user space takes a
 * copy as whole when two in a row are the same and seq is even. */
struct zc_thread {
	__u32 gen;
	__u32 tgid;
	__u8 path;
	__u8 pad[7];
	struct zc_sys sys;
	__u64 unknown_ns[8]; /* by ctx; 8 so that ctx & 7 is a provably safe index */
	__u64 seq;
	/* Its handler time (calls = runs timed) and its runs' differences
	 * from the kernel's (calls = runs compared, ns = a modular sum of
	 * signed differences): its (gen, PROBE_PATH, CTX_PROBE) and
	 * (gen, PROBE_PATH, CTX_KERNEL_DIFF) counters, as task is. */
	struct zc_stat_val probe;
	struct zc_stat_val kdiff;
	/* Task-context time, calls and bytes by path (user time under
	 * PATH_USER): the thread's (gen, path, CTX_TASK) counters, which the
	 * stats map holds only once the entry is gone (retire_counts) or
	 * could not be found. Only grow, modulo 2^64. */
	struct zc_path_counts task;
};

/* Identity of a generation, for user space. */
struct zc_thread_info {
	__u32 tid;
	__u32 tgid;
	char comm[16];
	__u64 start_ns;        /* task->start_time (CLOCK_MONOTONIC) */
	__u64 first_runtime_ns; /* se.sum_exec_runtime when first seen by BPF */
	__u64 exit_runtime_ns; /* se.sum_exec_runtime at the dead switch, else 0 */
	__u64 exit_utime_ns;   /* raw tick-based utime/stime at exit */
	__u64 exit_stime_ns;
	__u32 exited;
	__u32 pad;
	/* The task, as an identity (0 when registered from user space): a pid
	 * can change under a live task (a non-leader exec), its address not. */
	__u64 task;
	/* The process, as an identity: its leader's start_time (a pid is
	 * reused once every thread of its process is gone, a start never). */
	__u64 leader_start_ns;
};

/* A handler's own run time where it is not read from the clock: after
 * EST_WARM timed runs, one run in EST_EVERY is timed (two clock reads), the
 * others count the running mean of those (one read). Kept per CPU, by
 * slot: the syscall handlers by path, the others by kind. */
struct zc_run_est {
	__u32 mean_ns;
	__u16 countdown; /* runs until the next timed one */
	__u16 seen;      /* timed runs so far, up to EST_WARM */
};

#define EST_EVERY 16
#define EST_WARM 16
enum zc_est_slot {
	EST_SYS_ENTER = 0,               /* + path */
	EST_SYS_EXIT = NR_PATHS,         /* + path */
	EST_CTX_ENTER = 2 * NR_PATHS,    /* + ctx */
	EST_CTX_EXIT = 2 * NR_PATHS + 8, /* + ctx */
	EST_SWITCH = 2 * NR_PATHS + 16,
	EST_FEATURE = 2 * NR_PATHS + 17, /* + enum zc_feature_est */
	NR_EST = 64,
};

/* The feature programs' most frequent hooks (per skb or per send), whose
 * runs are estimated like the accounting handlers' (PROBE_PROG_EST): two
 * clock reads cost more than most of these programs' bodies. */
enum zc_feature_est {
	FEST_SEND_LENGTH,     /* accounting: sock:sock_send_length */
	FEST_OWN_NETIF_RX,    /* softirq owner split */
	FEST_OWN_TCP_PROBE,
	FEST_ZCB_SENDMSG,     /* byte classes */
	FEST_ZCB_SEND_LENGTH,
	FEST_ZCB_NETIF_RX,
	FEST_ZCB_XMIT,
	NR_FEATURE_EST,
};
_Static_assert(EST_FEATURE + NR_FEATURE_EST <= NR_EST, "est slots");

/* Per CPU: what runs now and since when; read by user space to add the
 * in-flight segment at snapshot time. */
struct zc_cpu {
	__u64 last_ts;
	__u32 tid;      /* current task as of the last event */
	__u32 gen;      /* 0: not a target */
	__u8 path;      /* base path of that task */
	__u8 resolved;  /* gen/path valid for tid */
	__u8 depth;     /* 0 = task context */
	__u8 sys_path;  /* system-row path used when gen == 0 */
	__u8 stack[MAX_DEPTH];
	__u32 epoch;    /* targets_epoch at resolution */
	__u32 in_pid;   /* task switched in last, */
	__s64 clk_off;  /* our clock - rq clock (see sample_clock_offset) */
	__u64 in_ts;    /* where we started its run (our clock) */
	__u64 in_rq;    /* and where the kernel did (its se.exec_start, rq clock) */
	/* Handler time (CTX_PROBE) of the task current on this CPU since it
	 * was switched in (or since the last flush), and the handler runs
	 * timed: flushed to the stats at switch-out, added in flight by
	 * user space. Owned by gen if set, else the system row (sys_path). */
	__u64 probe_ns;
	__u64 probe_runs;
	/* All handler time cut on this CPU at each nesting level (0 = task
	 * context), never reset: the function-exact backend's clocks leave it
	 * out, as every path's time does. A handler's time belongs to the
	 * level it started at (an interrupt's entry handler to the level it
	 * interrupts). */
	__u64 probe_at[MAX_DEPTH];
	__u64 in_probe_at; /* probe_at[0] at in_ts, before the switch's own run */
	struct zc_run_est est[NR_EST];
	/* Dispatch estimate a cut could not take because the span before it
	 * was shorter (dispatch_cut): the next cut of the same task takes it. */
	__u64 owed_ns;
	/* The running target's (gen, resolved) syscall state and its
	 * task-context counts since it was switched in, by path: written back
	 * to its entry at switch-out (zc_thread). pend_seq is the entry's seq
	 * when they were loaded: user space adds pend to an entry it read
	 * with that seq, and to no other. */
	struct zc_sys sys;
	__u64 pend_seq;
	__u32 pend_dirty; /* bit per path of pend that holds counts */
	__u32 pad2;
	struct zc_path_counts pend;
};

#endif
