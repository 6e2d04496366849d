//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/* The floor of what a probe costs, on the hooks the accounting uses.
 *
 * floor_*: a trivial program that counts its runs in one process
 * (floor_tgid) and nothing else. make bench attaches it to measure what
 * any probe costs there: the tracepoint's dispatch to a BPF program and
 * the syscall entry/exit slow path a sys_enter/sys_exit probe forces.
 *
 * clock_*: the same plus one clock read per run, which every exact timer
 * needs: the clock floor.
 *
 * calib_*: the same, with the shape of an accounting handler: two clock
 * reads, the time between them summed. What the calibrating thread pays
 * beyond that sum is what zcprof's handlers cannot time themselves; user
 * space measures it once per process (calibrate.go) and the accounting
 * counts it per handler run as zcprof's own time (dispatch_ns); the
 * sampler counts calib_sample's figure per sample. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 floor_tgid = 0;
const volatile __u32 calib_tid = 0;

struct floor_count {
	__u64 runs;
	__u64 timed_ns; /* calib_*: sum of the time between the two reads */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct floor_count);
} floor_runs SEC(".maps");

/* clocked: plus the one clock read per event that any exact timer needs
 * (the clock floor, clock_*): on our PVM guests the read alone costs more
 * than the trivial program's whole run, so it bounds what exact accounting
 * can cost from below. The reading is kept so that it cannot be optimised
 * away. */
static __always_inline int run(bool clocked)
{
	__u32 zero = 0;
	struct floor_count *n;

	if (bpf_get_current_pid_tgid() >> 32 != floor_tgid)
		return 0;
	n = bpf_map_lookup_elem(&floor_runs, &zero);
	if (n) {
		n->runs++;
		if (clocked)
			n->timed_ns = bpf_ktime_get_ns();
	}
	return 0;
}

static __always_inline int calib(void)
{
	__u32 zero = 0;
	struct floor_count *n;
	__u64 t0, t1;

	if ((__u32)bpf_get_current_pid_tgid() != calib_tid)
		return 0;
	t0 = bpf_ktime_get_ns();
	n = bpf_map_lookup_elem(&floor_runs, &zero);
	t1 = bpf_ktime_get_ns();
	if (n) {
		n->runs++;
		n->timed_ns += t1 - t0;
	}
	return 0;
}

/* The floor's programs on every accounting hook, named prefix_<hook>. */
#define ON_ACCOUNTING_HOOKS(prefix, clocked)                                   \
	SEC("tp_btf/sys_enter") int BPF_PROG(prefix##_sys_enter) { return run(clocked); } \
	SEC("tp_btf/sys_exit") int BPF_PROG(prefix##_sys_exit) { return run(clocked); } \
	SEC("tp_btf/sched_switch") int BPF_PROG(prefix##_sched_switch) { return run(clocked); } \
	SEC("tp_btf/softirq_entry") int BPF_PROG(prefix##_softirq_entry) { return run(clocked); } \
	SEC("tp_btf/softirq_exit") int BPF_PROG(prefix##_softirq_exit) { return run(clocked); } \
	SEC("tp_btf/irq_handler_entry") int BPF_PROG(prefix##_irq_entry) { return run(clocked); } \
	SEC("tp_btf/irq_handler_exit") int BPF_PROG(prefix##_irq_exit) { return run(clocked); }

ON_ACCOUNTING_HOOKS(floor, false)
ON_ACCOUNTING_HOOKS(clock, true)

SEC("tp_btf/sys_enter")
int BPF_PROG(calib_sys_enter) { return calib(); }

SEC("tp_btf/sys_exit")
int BPF_PROG(calib_sys_exit) { return calib(); }

/* On a cpu-clock perf event of the calibrating thread: what a sample costs
 * beyond a program's run (the timer interrupt, its hrtimer, perf's
 * dispatch to the program), which the sampler cannot time itself. */
SEC("perf_event")
int calib_sample(void *ctx) { return calib(); }
