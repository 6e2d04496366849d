/* The softirq owner split's counters and its open segment per CPU,
 * declared for both objects that write them: the owner programs
 * (softirq_owner.bpf.c) open and name segments, and the accounting's
 * softirq_exit handler (accounting.bpf.c) closes the NET_RX one at the
 * clock read it makes anyway, so that softirq_exit carries one program
 * instead of two. The accounting's maps are the real ones (sized for the
 * split only when the session asks for it); the owner loader takes them
 * over (MapReplacements). */
#ifndef ZCPROF_OWNER_SPLIT_H
#define ZCPROF_OWNER_SPLIT_H

#include "softirq_owner.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct zc_owner_key);
	__type(value, struct zc_owner_val);
} owner_stats SEC(".maps");

struct zc_owner_seg {
	__u64 start;
	__u64 skb;
	__u32 gen;
	__u32 owner;
	__u32 open;
	/* The segment's own count and payload bytes, as tcp_probe found them
	 * for its owner (same key as the segment's time): added with the
	 * time when it closes, one owner_stats update per segment, not two. */
	__u32 segs;
	__u64 bytes;
	__u64 id; /* scratch: resolve_pending */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct zc_owner_seg);
} owner_segs SEC(".maps");

struct zc_owner_pending {
	__u64 skb; /* 0: free */
	__u32 gen;
	__u32 pad;
	__u64 ns;
};

/* The NET_RX time of skbs that went to a socket backlog, in a slot by skb
 * address. An array, not a hash map: an LRU hash update and delete per
 * backlogged segment cost more than the rest of the split (on our guests
 * 400-600 ns per segment); a slot another skb takes first, or two CPUs
 * write at once, leaves that time unattributed, as an LRU eviction did.
 * The owner and UNKNOWN always move by the same amount, so the NET_RX
 * total stays exact either way. */
#define PENDING_SLOTS 65536

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PENDING_SLOTS);
	__type(key, __u32);
	__type(value, struct zc_owner_pending);
} owner_pending SEC(".maps");

/* Updates of owner_stats refused (a full map). A map, not a global, so
 * that both objects count into one. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} owner_drops SEC(".maps");

static __always_inline struct zc_owner_seg *this_seg(void) { return only_slot(&owner_segs); }

static __always_inline struct zc_owner_pending *pending_slot(__u64 skb)
{
	/* skbs come from a slab: mix the address's middle bits. (A session
	 * without the split has one slot, but opens no segment to need it.) */
	__u32 i = (__u32)((skb * 0x9E3779B97F4A7C15ULL) >> 48) & (PENDING_SLOTS - 1);

	return bpf_map_lookup_elem(&owner_pending, &i);
}

static __always_inline void add_owner(__u32 gen, __u32 owner, __u8 ctx, __u64 segs, __u64 bytes, __u64 ns)
{
	struct zc_owner_key k = { .gen = gen, .owner = owner, .ctx = ctx };
	struct zc_owner_val zero = {}, *v;

	v = counter_slot(&owner_stats, &k, &zero, &owner_drops);
	if (!v)
		return;
	v->segs += segs;
	v->bytes += bytes;
	v->ns += ns;
}

/* The open segment ends at now: its NET_RX time goes to its owner, and a
 * segment no tcp_probe named waits in a pending slot for its backlog's. */
static __always_inline void close_seg(struct zc_owner_seg *s, __u64 now)
{
	struct zc_owner_pending *p;
	__u64 skb = s->skb, segs = s->segs, bytes = s->bytes;

	if (!s->open)
		return;
	s->open = 0;
	s->segs = 0;
	s->bytes = 0;
	if (now <= s->start) {
		if (segs)
			add_owner(s->gen, s->owner, ZC_OWNER_CTX_NET_RX, segs, bytes, 0);
		return;
	}
	add_owner(s->gen, s->owner, ZC_OWNER_CTX_NET_RX, segs, bytes, now - s->start);
	if (s->owner == ZC_OWNER_UNKNOWN && skb && (p = pending_slot(skb))) {
		p->gen = s->gen;
		p->ns = now - s->start;
		p->skb = skb;
	}
}

/* At NET_RX softirq exit (the accounting's handler): no segment is open
 * unless the owner programs are attached. */
static __always_inline void close_net_rx_seg(__u64 now)
{
	struct zc_owner_seg *s = this_seg();

	if (s)
		close_seg(s, now);
}

#endif
