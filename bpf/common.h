/* What every zcprof BPF object that reads the accounting shares with it:
 * its per-thread and per-CPU state maps, declared once here, and small
 * helpers. Each object gets its own copy of the declarations; the loaders
 * replace both maps with the accounting session's (Session.SharedMaps), so
 * that all of them read and write the same state. */
#ifndef ZCPROF_COMMON_H
#define ZCPROF_COMMON_H

#include "accounting.h"
#include "slots.h"

/* Target threads by tid: generation, tgid and current path. Deleted when
 * the thread is switched out dead, so a reused tid gets a fresh entry. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct zc_thread);
} threads SEC(".maps");

/* Per CPU: who runs, in which context, since when. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct zc_cpu);
} cpu_states SEC(".maps");

/* v & mask, with what clang knows about v hidden so that it keeps the mask
 * the verifier needs to bound an array index. */
static __always_inline __u32 masked(__u32 v, __u32 mask)
{
	asm volatile("" : "+r"(v));
	return v & mask;
}

/* The value under key in a counter map, inserted as zero if new; NULL when
 * the map refuses it (full, or -EBUSY when an insert interrupts another
 * into the same bucket on this CPU), which drops[0] counts if drops is
 * given (NULL: the caller keeps what was refused itself). */
static __always_inline void *counter_slot(void *map, const void *key, const void *zero, void *drops)
{
	void *v = bpf_map_lookup_elem(map, key);
	__u32 first = 0;
	__u64 *n;

	if (v)
		return v;
	bpf_map_update_elem(map, key, zero, BPF_NOEXIST);
	v = bpf_map_lookup_elem(map, key);
	if (!v && drops && (n = bpf_map_lookup_elem(drops, &first)))
		__sync_fetch_and_add(n, 1);
	return v;
}

/* This CPU's accounting state. */
static __always_inline struct zc_cpu *this_cpu(void) { return only_slot(&cpu_states); }

/* File types (S_IFMT bits of i_mode), macros the BTF does not carry. */
#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define S_IFREG 0100000
#define S_IFIFO 0010000

/* 6.2+: a typed view of a pointer read with a helper or computed (a
 * file's private_data, skb->cb, a tcp_sock of a sock), so that its fields
 * are plain loads. Weak: missing on 6.1, where the callers fall back to
 * probe reads (50-70 ns each on our PVM guests). */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* The current task's file at fd. task->files->fdt are typed BTF pointers:
 * plain loads. The fd array slot still needs a probe read. The fd is not
 * checked against max_fds: a bad fd fails the syscall anyway, and the
 * probe read cannot fault. */
static __always_inline struct file *fd_file(long fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct file **fds = task->files->fdt->fd;
	struct file *f = NULL;

	if (fd < 0 || fd > 0xfffff)
		return NULL;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

/* zcprof's socket paths are TCP's: a stream socket of IPPROTO_TCP (MPTCP,
 * UDP, AF_UNIX, netlink and raw sockets are not). */
static __always_inline int is_tcp_stream(__u16 protocol, __u16 type)
{
	return protocol == IPPROTO_TCP && type == SOCK_STREAM;
}

/* Whether sk is a TCP stream socket, whether its pointer is typed (a
 * tracepoint's argument) or was read from memory (the fd table). */
static __always_inline int sock_is_tcp(const struct sock *sk)
{
	if (bpf_rdonly_cast) {
		const struct sock *typed = bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct sock));

		return is_tcp_stream(typed->sk_protocol, typed->sk_type);
	}
	return is_tcp_stream(BPF_CORE_READ(sk, sk_protocol), BPF_CORE_READ(sk, sk_type));
}

/* The sock of file f if it is a socket, else NULL; *mode is its file type
 * (S_IFMT bits). A socket file's private_data is its struct socket. */
static __always_inline struct sock *file_sock(struct file *f, __u32 *mode)
{
	struct socket *sock;

	if (bpf_rdonly_cast) {
		struct file *typed = bpf_rdonly_cast(f, bpf_core_type_id_kernel(struct file));

		*mode = typed->f_inode->i_mode & S_IFMT;
		if (*mode != S_IFSOCK)
			return NULL;
		sock = bpf_rdonly_cast(typed->private_data, bpf_core_type_id_kernel(struct socket));
		return sock->sk;
	}
	*mode = BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT;
	if (*mode != S_IFSOCK)
		return NULL;
	sock = BPF_CORE_READ(f, private_data);
	return BPF_CORE_READ(sock, sk);
}

/* The sock of the current task's fd if it is a TCP stream socket. */
static __always_inline struct sock *fd_tcp_sock(long fd)
{
	struct file *f = fd_file(fd);
	struct sock *sk;
	__u32 mode;

	if (!f)
		return NULL;
	sk = file_sock(f, &mode);
	return sk && sock_is_tcp(sk) ? sk : NULL;
}

/* What an fd is, as classify() needs it: its file type (S_IFMT bits),
 * except that a socket is FD_TCP or FD_SOCK. The socket paths are TCP's:
 * UDP, AF_UNIX, netlink, MPTCP and raw sockets are FD_SOCK and their
 * syscalls go to "other". S_IFMT types are multiples of 010000, so
 * FD_SOCK is none of them. */
#define FD_TCP S_IFSOCK
#define FD_SOCK 1

static __always_inline __u32 fd_kind(long fd)
{
	struct file *f = fd_file(fd);
	struct sock *sk;
	__u32 mode;

	if (!f)
		return 0;
	sk = file_sock(f, &mode);
	if (mode != S_IFSOCK)
		return mode;
	return sk && sock_is_tcp(sk) ? FD_TCP : FD_SOCK;
}

/* Lazy classification. At sys_enter the socket calls (read, write, send,
 * recv and their vector forms) take their TCP path on trust, with the fd
 * kept in zc_sys.check_fd, and the fd's kind is checked at the first event
 * that needs the path: an interrupt, a switch or a feature program inside
 * the call, or its sys_exit. By then the call has looked the fd up itself,
 * so its file, inode and sock are in the TLB and caches. At sys_enter,
 * right after a kernel entry that flushed the TLB (pti without PCID), the
 * same lookup took about 190 ns of the handler's run (bpf_stats, PVM
 * guests): misses the syscall would have taken a moment later, billed as
 * zcprof's own. An fd closed by another thread before the check makes the
 * call "other", as a bad fd is. */
static __noinline __u8 checked_path(__u32 check_fd, __u8 path)
{
	return fd_kind((long)check_fd - 1) == FD_TCP ? path : PATH_OTHER;
}

/* Interrupt handlers nest into this one and settle too: the path is
 * written before check_fd is cleared, so that a nested handler sees either
 * the check still due (and makes it itself, with the same answer) or its
 * result. Clearing first let a timer interrupt in the fd lookup (five probe
 * reads on 6.1, microseconds under emulation) charge the call's time so
 * far to the path taken on trust. */
static __noinline int settle_fd_slow(struct zc_cpu *c)
{
	__u32 check_fd = c->sys.check_fd;

	if (check_fd && checked_path(check_fd, c->path) == PATH_OTHER) {
		c->path = PATH_OTHER;
		c->sys.arg = 0; /* no mmsghdr vector, and the call counts */
	}
	asm volatile("" ::: "memory");
	c->sys.check_fd = 0;
	return 0;
}

/* The path c holds, checked if it was taken on trust, when the current
 * task is c's (only its fd table can say; a missed switch leaves the
 * check to the thread's next event). */
static __always_inline void settle_fd(struct zc_cpu *c)
{
	if (c->gen && c->sys.check_fd && c->tid == (__u32)bpf_get_current_pid_tgid())
		settle_fd_slow(c);
}

/* The path of a current target's entry, checked as settle_fd would. */
static __always_inline __u8 entry_path(struct zc_thread *t)
{
	return t->sys.check_fd ? checked_path(t->sys.check_fd, t->path) : t->path;
}

/* The current task's entry in threads, if it is a target. Looked up by tid
 * rather than trusting a CPU's cached identity: a switch or a new target
 * resets that cache, and a syscall's call, bytes and path must not be lost. */
static __always_inline struct zc_thread *current_thread(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	return bpf_map_lookup_elem(&threads, &tid);
}

/* Who tid, the task running on c's CPU, is: its generation (0: not a
 * target) and path, or for a task that is not a target the system row's
 * path its time goes to. The CPU's state answers once the accounting has
 * resolved the task there (no lookup: the byte classes ask per send, the
 * sampler per sample); before that, its entry. A thread made a target
 * while it runs is answered as the CPU last resolved it until the
 * accounting's next event there, which the accounting charges alike.
 * fentry/fexit programs are preemptible (on PREEMPT_RT, inside softirqs
 * too), and a switch meanwhile clears the CPU's answer: it is taken only
 * if it still holds after it was read (once the sender's tx.msg_zerocopy
 * path came with generation 0 on 6.12-rt), else the entry answers. */
static __always_inline __u32 task_target(struct zc_cpu *c, __u32 tid, __u8 *path)
{
	struct zc_thread *t;

	if (c && c->resolved && c->tid == tid) {
		__u32 gen = *(volatile __u32 *)&c->gen;
		__u8 p;

		if (gen) {
			settle_fd(c);
			p = c->path;
		} else {
			p = c->sys_path;
		}
		asm volatile("" ::: "memory");
		if (*(volatile __u8 *)&c->resolved && *(volatile __u32 *)&c->tid == tid) {
			*path = p;
			return gen;
		}
	}
	t = tid ? bpf_map_lookup_elem(&threads, &tid) : NULL;
	if (!t) {
		*path = tid ? PATH_SYS_OTHER_TASK : PATH_SYS_IDLE;
		return 0;
	}
	*path = entry_path(t);
	return t->gen;
}

/* task_target of the current task. */
static __always_inline __u32 current_target(__u8 *path)
{
	return task_target(this_cpu(), (__u32)bpf_get_current_pid_tgid(), path);
}

/* Whether the current task is a target whose last sendfile or splice
 * source could not splice (SYS_NOTE_SRC_COPY; its CPU's copy while it
 * runs, as task_target). */
static __always_inline __u8 current_src_copy(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct zc_cpu *c = this_cpu();
	struct zc_thread *t;

	if (c && c->resolved && c->gen && c->tid == tid)
		return c->sys.notes & SYS_NOTE_SRC_COPY;
	t = bpf_map_lookup_elem(&threads, &tid);
	return t ? t->sys.notes & SYS_NOTE_SRC_COPY : 0;
}

/* The context a softirq vector runs in. */
static __always_inline __u8 softirq_ctx(unsigned int vec)
{
	if (vec == NET_RX_SOFTIRQ)
		return CTX_SOFTIRQ_NET_RX;
	if (vec == NET_TX_SOFTIRQ)
		return CTX_SOFTIRQ_NET_TX;
	return CTX_SOFTIRQ_OTHER;
}

/* zcprof's own time: this handler ran from start (its first clock read)
 * to end. Move the open span's start (last_ts) forward by as much, so that
 * the next charge leaves it out of the thread's user, path or interrupt
 * time, and keep it as the current task's probe time. What runs before
 * the first clock read (tracepoint dispatch, the syscall slow path a
 * sys_enter probe forces, resolve() in the syscall handlers) cannot be
 * timed here: user space calibrates it (profiler/calibrate.go). */
static __always_inline void probe_cut(struct zc_cpu *c, __u64 start, __u64 end)
{
	__u64 last = c->last_ts, d, to;

	if (end <= start || !last)
		return;
	if (last <= start) {
		d = end - start;
		to = last + d;
	} else {
		/* A nested handler (an interrupt) charged past our start, or
		 * an estimated run before us ran ahead (catch_up). */
		if (end <= last)
			return;
		d = end - last;
		to = end;
	}
	if (__sync_val_compare_and_swap(&c->last_ts, last, to) != last)
		return; /* and again meanwhile: leave the span as it is */
	c->probe_ns += d;
	c->probe_runs++;
	c->probe_at[masked(c->depth, MAX_DEPTH - 1)] += d;
}

/* Probe time d that began before the span's last event could have seen it
 * (an interrupt's cost ahead of its program): the CPU's charge point moves
 * on by all of d, past the clock when the last event came within d of
 * the program; catch_up gives any overshoot back at the next accounting
 * event. Only for programs nothing nests in (hardirq context). */
static __always_inline void probe_take(struct zc_cpu *c, __u64 d)
{
	__u64 last = c->last_ts;

	if (!last || !d)
		return;
	if (__sync_val_compare_and_swap(&c->last_ts, last, last + d) != last)
		return;
	c->probe_ns += d;
	c->probe_runs++;
	c->probe_at[masked(c->depth, MAX_DEPTH - 1)] += d;
}

/* An estimated run (probe_done_est) moves last_ts by its slot's mean, past
 * the clock when the handler was quicker and the next event came first:
 * the estimate would then create time, and a loop of events closer than
 * the mean would run ever further ahead. Every accounting handler gives
 * the overshoot back at its clock read, before it charges or flushes
 * anything: it is probe time of the task current since the last flush. */
static __always_inline void catch_up(struct zc_cpu *c, __u64 now)
{
	__u64 last = c->last_ts, over, *at;

	if (last <= now)
		return;
	over = last - now;
	if (__sync_val_compare_and_swap(&c->last_ts, last, now) != last)
		return;
	c->probe_ns = c->probe_ns > over ? c->probe_ns - over : 0;
	at = &c->probe_at[masked(c->depth, MAX_DEPTH - 1)];
	*at = *at > over ? *at - over : 0;
}

static __always_inline void probe_done(struct zc_cpu *c, __u64 start)
{
	probe_cut(c, start, bpf_ktime_get_ns());
}

/* probe_done for the accounting's own handlers, the most frequent events:
 * a clock read costs about as much as the rest of a handler, so once a
 * slot has EST_WARM timed runs, only one run in EST_EVERY per CPU and slot
 * reads the clock at its end; the others count the running mean of those
 * timed runs (struct zc_run_est). A run that a nested handler interrupted
 * is timed, and left out of the mean.
 *
 * The mean starts as the least of the warm-up runs and then takes only
 * runs within 4 times it: the first runs of a slot can be many times
 * slower (under qemu's TCG each new code path is translated first: a
 * sendmsg slot began at tens of microseconds and its 64 calls' estimates
 * took 2.9 ms of tx.write into probe time), and one such run in a mean
 * would move path time into probe time for hundreds of runs after it.
 * Outliers are still timed exactly, as the runs they are. */
static __always_inline int est_ready(struct zc_run_est *e)
{
	return e->seen >= EST_WARM && e->countdown;
}

/* A timed run [start, end) teaches its slot's mean; alone = no nested
 * handler charged during it. */
static __always_inline void est_learn(struct zc_run_est *e, __u64 start, __u64 end, int alone)
{
	__u64 d = end - start;

	/* A run over 100 us was preempted or stolen from, not slow. */
	if (end > start && alone && d < 100000) {
		if (e->seen < EST_WARM) {
			if (!e->seen || d < e->mean_ns)
				e->mean_ns = (__u32)d;
			e->seen++;
		} else if (d <= 4 * (__u64)e->mean_ns) {
			/* mean = 7/8 mean + 1/8 d */
			e->mean_ns = e->mean_ns - (e->mean_ns >> 3) + (__u32)(d >> 3);
		}
		e->countdown = EST_EVERY - 1;
	}
}

static __always_inline void probe_done_est(struct zc_cpu *c, __u64 start, __u32 slot)
{
	struct zc_run_est *e = &c->est[masked(slot, NR_EST - 1)];
	__u64 end;

	if (est_ready(e) && c->last_ts <= start) {
		e->countdown--;
		probe_cut(c, start, start + e->mean_ns);
		return;
	}
	end = bpf_ktime_get_ns();
	est_learn(e, start, end, c->last_ts <= start);
	probe_cut(c, start, end);
}

/* What a program cannot time on a hook other than sys_enter/sys_exit: its
 * tracepoint's dispatch to it (the hook's wrapper and bpf_trace_run*).
 * Measured by user space before load (calibrate.go: one more trivial
 * program on a hook) and set in .rodata; 0 when it could not be measured. */
const volatile __u64 cfg_hook_dispatch_ns = 0;

/* The feature programs (byte classes, the softirq owner split, the
 * sampler) and the accounting's untimed hooks are zcprof's time as well:
 * timed like the accounting handlers, from a clock read at their start
 * (probe_start) to probe_end, plus the hook's dispatch, cut out of what
 * the CPU was charging and kept as the current task's probe time. */
static __always_inline __u64 probe_start(void)
{
	return bpf_ktime_get_ns();
}

static __always_inline void probe_end(__u64 start)
{
	struct zc_cpu *c = this_cpu();

	if (c && start > cfg_hook_dispatch_ns)
		probe_done(c, start - cfg_hook_dispatch_ns);
}

/* probe_start/probe_end for a feature program on a frequent hook: after
 * its slot's warm-up, only one run in EST_EVERY per CPU reads the clock
 * (twice); the others read none and take the slot's mean plus the hook's
 * dispatch, moving the CPU's charge point on by that much (probe_take).
 * On this PVM guest the two reads cost 250-300 ns in softirq context, more
 * than the owner split's or the byte classes' bodies. An estimated run
 * that a nested handler charged during cuts back from a clock read at its
 * end, no further than that handler; an estimate longer than the time
 * since the last charge is given back by the next accounting event
 * (catch_up). */
struct probe_run {
	struct zc_cpu *c;
	__u64 start; /* 0: estimated */
	__u64 last;  /* c->last_ts at the start */
};

static __always_inline struct probe_run probe_start_est(__u32 slot)
{
	struct probe_run r = { .c = this_cpu() };

	if (!r.c)
		return r;
	r.last = r.c->last_ts;
	if (!est_ready(&r.c->est[masked(EST_FEATURE + slot, NR_EST - 1)]))
		r.start = bpf_ktime_get_ns();
	return r;
}

static __always_inline void probe_end_est(struct probe_run r, __u32 slot)
{
	struct zc_cpu *c = r.c;
	struct zc_run_est *e;
	__u64 end, d;

	if (!c)
		return;
	e = &c->est[masked(EST_FEATURE + slot, NR_EST - 1)];
	if (!r.start) {
		d = e->mean_ns + cfg_hook_dispatch_ns;
		e->countdown--;
		if (c->last_ts == r.last) {
			probe_take(c, d);
			return;
		}
		end = bpf_ktime_get_ns();
		if (end > d)
			probe_cut(c, end - d, end);
		return;
	}
	end = bpf_ktime_get_ns();
	est_learn(e, r.start, end, c->last_ts == r.last);
	if (r.start > cfg_hook_dispatch_ns)
		probe_cut(c, r.start - cfg_hook_dispatch_ns, end);
}

/* BPF_PROG (bpf_tracing.h) with the program's run timed as zcprof's own
 * (probe_start/probe_end around the body). */
#define PROBE_PROG(name, args...)                                              \
	name(unsigned long long *ctx);                                         \
	static __always_inline typeof(name(0)) ____##name(unsigned long long *ctx, ##args); \
	typeof(name(0)) name(unsigned long long *ctx)                          \
	{                                                                      \
		__u64 _t0 = probe_start();                                     \
		typeof(name(0)) _r;                                            \
		_Pragma("GCC diagnostic push")                                 \
		_Pragma("GCC diagnostic ignored \"-Wint-conversion\"")          \
		_r = ____##name(___bpf_ctx_cast(args));                        \
		_Pragma("GCC diagnostic pop")                                  \
		probe_end(_t0);                                                \
		return _r;                                                     \
	}                                                                      \
	static __always_inline typeof(name(0)) ____##name(unsigned long long *ctx, ##args)

/* PROBE_PROG for a frequent hook: its run estimated in slot (enum
 * zc_feature_est) as probe_start_est says. */
#define PROBE_PROG_EST(slot, name, args...)                                    \
	name(unsigned long long *ctx);                                         \
	static __always_inline typeof(name(0)) ____##name(unsigned long long *ctx, ##args); \
	typeof(name(0)) name(unsigned long long *ctx)                          \
	{                                                                      \
		struct probe_run _run = probe_start_est(slot);                 \
		typeof(name(0)) _r;                                            \
		_Pragma("GCC diagnostic push")                                 \
		_Pragma("GCC diagnostic ignored \"-Wint-conversion\"")          \
		_r = ____##name(___bpf_ctx_cast(args));                        \
		_Pragma("GCC diagnostic pop")                                  \
		probe_end_est(_run, slot);                                     \
		return _r;                                                     \
	}                                                                      \
	static __always_inline typeof(name(0)) ____##name(unsigned long long *ctx, ##args)

/* The same for a classic tracepoint program taking its record type. */
#define PROBE_TP(name, type)                                                   \
	name(type *ctx);                                                       \
	static __always_inline int ____##name(type *ctx);                      \
	int name(type *ctx)                                                    \
	{                                                                      \
		__u64 _t0 = probe_start();                                     \
		int _r = ____##name(ctx);                                      \
		probe_end(_t0);                                                \
		return _r;                                                     \
	}                                                                      \
	static __always_inline int ____##name(type *ctx)

#endif
