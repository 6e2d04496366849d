//go:build ignore

// SPDX-License-Identifier: GPL-2.0
//
// Feature probes for `zcprof doctor`: one trivial program per attach kind.
// Each only counts its hits, so doctor can tell "attached" from "attached and
// fired". They never read their arguments: the same fentry/kprobe/tp_btf
// program can then be retargeted at any function or tracepoint from Go
// (ProgramSpec.AttachTo) without the verifier caring about the prototype.
//
// Program names stay within 15 characters (BPF_OBJ_NAME_LEN) so that the
// kernel reports them untruncated; tests look for the "doctor_" prefix to
// prove that nothing is left loaded.

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "slots.h"

char LICENSE[] SEC("license") = "GPL";

// Slots of doctor_hits. Keep in sync with hit* in profiler/doctor/hits.go.
enum doctor_hit {
	HIT_TP_BTF = 0,
	HIT_RAW_TP = 1,
	HIT_FENTRY = 2,
	HIT_KPROBE = 3,
	HIT_KPROBE_MULTI = 4,
	HIT_PERF = 5,
	HIT_PERF_KSTACK = 6,
	HIT_TP_ANY = 7,
	HIT_MAX = 8,
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HIT_MAX);
	__type(key, u32);
	__type(value, u64);
} doctor_hits SEC(".maps");

// Kernel stacks of perf_event samples; doctor only counts successful ids.
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 1024);
	__uint(key_size, sizeof(u32));
	__uint(value_size, 127 * sizeof(u64));
} doctor_stacks SEC(".maps");

static __always_inline void hit(u32 slot) { count_at(&doctor_hits, slot, 1); }

SEC("tp_btf/sched_switch")
int BPF_PROG(doctor_tp_btf)
{
	hit(HIT_TP_BTF);
	return 0;
}

// Retargeted from Go at every tracepoint zcprof uses.
SEC("tp_btf/sched_switch")
int BPF_PROG(doctor_tp_any)
{
	hit(HIT_TP_ANY);
	return 0;
}

// Retargeted from Go at the classic tracepoints zcprof attaches through
// tracefs (their ids are read there).
SEC("tracepoint")
int doctor_tp_classic(void *ctx)
{
	hit(HIT_TP_ANY);
	return 0;
}

SEC("raw_tp/sched_switch")
int doctor_raw_tp(struct bpf_raw_tracepoint_args *ctx)
{
	hit(HIT_RAW_TP);
	return 0;
}

SEC("fentry/tcp_sendmsg")
int BPF_PROG(doctor_fentry)
{
	hit(HIT_FENTRY);
	return 0;
}

SEC("kprobe/tcp_sendmsg")
int doctor_kprobe(struct pt_regs *ctx)
{
	hit(HIT_KPROBE);
	return 0;
}

// The pattern is expanded from /proc/kallsyms in Go: cilium/ebpf takes a
// symbol list, not a glob.
SEC("kprobe.multi/tcp_sendmsg*")
int doctor_kmulti(struct pt_regs *ctx)
{
	hit(HIT_KPROBE_MULTI);
	return 0;
}

SEC("perf_event")
int doctor_perf(struct bpf_perf_event_data *ctx)
{
	hit(HIT_PERF);
	// flags 0 = kernel stack. Samples taken in user mode have none and
	// return an error, which is why doctor keeps the kernel busy in syscalls.
	if (bpf_get_stackid(ctx, &doctor_stacks, 0) >= 0)
		hit(HIT_PERF_KSTACK);
	return 0;
}
