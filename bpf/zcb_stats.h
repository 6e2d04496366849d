/* The byte-class counters, declared for both objects that count into
 * them: the byte-class programs (zcbytes.bpf.c) and the accounting's
 * syscall handlers (accounting.bpf.c), which count what a syscall shows
 * (TCP_ZEROCOPY_RECEIVE's mapped bytes) without a probe of their own.
 * The accounting's maps are the real ones; the byte-class loader takes
 * them over (MapReplacements). */
#ifndef ZCPROF_ZCB_STATS_H
#define ZCPROF_ZCB_STATS_H

#include "zcbytes.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 65536);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct zcb_key);
	__type(value, struct zcb_val);
} zcb_stats SEC(".maps");

/* Updates zcb_stats refused: full, or -EBUSY when an insert interrupts
 * another into the same bucket on this CPU. A map, not a global, so that
 * both objects count into one. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} zcb_drops SEC(".maps");

static __always_inline void add_class(__u32 gen, __u8 path, __u8 class, __u64 bytes, __u64 events)
{
	struct zcb_key k = { .gen = gen, .path = path, .class = class };
	struct zcb_val zero = {}, *v;

	if (!gen)
		return;
	v = counter_slot(&zcb_stats, &k, &zero, &zcb_drops);
	if (!v)
		return;
	v->bytes += bytes;
	v->events += events;
}

#endif
