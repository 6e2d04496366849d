/* Slot helpers every zcprof BPF object uses, the doctor's probes included:
 * no maps of their own, so that including them adds none. */
#ifndef ZCPROF_SLOTS_H
#define ZCPROF_SLOTS_H

/* The value of a single-entry array (a per-CPU one: this CPU's). */
static __always_inline void *only_slot(void *map)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(map, &zero);
}

/* Adds n to the counter at slot of an array of __u64, atomically: a
 * shared array's slot is written from every CPU, and a per-CPU one's by a
 * handler that something on its CPU may interrupt. */
static __always_inline void count_at(void *map, __u32 slot, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(map, &slot);

	if (v)
		__sync_fetch_and_add(v, n);
}

#endif
