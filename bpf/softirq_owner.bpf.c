//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/* Whose work is the NET_RX softirq a thread runs?
 *
 * On loopback and veth, receive processing runs in whichever task re-enables
 * bottom halves (KERNEL.md §7): the sender processes the receiver's data
 * segments, the receiver processes the sender's ACKs (and the transmissions
 * they trigger). The accounting programs measure that time exactly per
 * thread; this object says for whose socket it was.
 *
 * Each skb that enters the stack (net:netif_receive_skb) opens a segment on
 * this CPU; tcp:tcp_probe (top of tcp_rcv_established, once per segment, with
 * the destination sock) names its owner; the segment ends at the next skb or
 * at softirq exit. IP-level work before tcp_rcv_established (including the
 * deferred MSG_ZEROCOPY copy in ip_local_deliver_finish) therefore lands in
 * the right segment, and so do the ACK and transmits tcp_rcv_established
 * triggers. An skb queued to a socket's backlog (its owner is inside a
 * syscall) reaches tcp_probe only later, from the owner's release_sock: its
 * segment is kept in `pending` by skb address, counted as unattributed, and
 * moved to the owner when that tcp_probe comes. (An skb the backlog
 * coalesces into its tail is freed unprobed and stays unattributed.)
 *
 * Owners are socket cookies registered from user space (SO_COOKIE).
 * Segments and payload bytes are also counted per (thread, owner, context)
 * for every registered socket, in softirq or not, which makes the byte
 * count checkable: every payload byte is received once. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "accounting.h"
#include "softirq_owner.h"

char LICENSE[] SEC("license") = "GPL";

/* Shared with the accounting object (same definition): who runs on this
 * CPU and in which context. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct zc_cpu);
} cpu_states SEC(".maps");

/* cookie -> owner tag (>= ZC_OWNER_FIRST). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u32);
} owners SEC(".maps");

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
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct zc_owner_seg);
} owner_segs SEC(".maps");

struct zc_owner_pending {
	__u32 gen;
	__u32 pad;
	__u64 ns;
};

/* skb address -> its NET_RX time, for skbs that went to a socket backlog. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct zc_owner_pending);
} pending SEC(".maps");

__u64 owner_dropped = 0;

/* v & mask, hidden from clang so the verifier sees the bound (see
 * accounting.bpf.c). */
static __always_inline __u32 masked(__u32 v, __u32 mask)
{
	asm volatile("" : "+r"(v));
	return v & mask;
}

static __always_inline struct zc_cpu *acct_cpu(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&cpu_states, &zero);
}

static __always_inline struct zc_owner_seg *this_seg(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&owner_segs, &zero);
}

static __always_inline int in_net_rx(struct zc_cpu *c)
{
	return c->depth > 0 && c->stack[masked(c->depth, MAX_DEPTH - 1)] == CTX_SOFTIRQ_NET_RX;
}

/* The accounting's generation of the current task, valid once it resolved
 * the task (softirq_entry and sys_enter both do); 0 = not a target. */
static __always_inline __u32 current_gen(struct zc_cpu *c)
{
	if (!c->resolved || c->tid != (__u32)bpf_get_current_pid_tgid())
		return 0;
	return c->gen;
}

static __always_inline void add(__u32 gen, __u32 owner, __u8 ctx, __u64 segs, __u64 bytes, __u64 ns)
{
	struct zc_owner_key k = { .gen = gen, .owner = owner, .ctx = ctx };
	struct zc_owner_val *v = bpf_map_lookup_elem(&owner_stats, &k);

	if (!v) {
		struct zc_owner_val zero = {};
		bpf_map_update_elem(&owner_stats, &k, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&owner_stats, &k);
		if (!v) {
			__sync_fetch_and_add(&owner_dropped, 1);
			return;
		}
	}
	v->segs += segs;
	v->bytes += bytes;
	v->ns += ns;
}

static __always_inline void close_seg(struct zc_owner_seg *s, __u64 now)
{
	struct zc_owner_pending p;
	__u64 skb = s->skb;

	if (!s->open)
		return;
	s->open = 0;
	if (now <= s->start)
		return;
	add(s->gen, s->owner, ZC_OWNER_CTX_NET_RX, 0, 0, now - s->start);
	if (s->owner == ZC_OWNER_UNKNOWN && skb) {
		p.gen = s->gen;
		p.pad = 0;
		p.ns = now - s->start;
		bpf_map_update_elem(&pending, &skb, &p, BPF_ANY);
	}
}

/* A backlogged skb reached tcp_rcv_established: its NET_RX time moves from
 * unattributed to its owner. Per-CPU values, so the subtraction is modular
 * (user space sums u64s, as in accounting.bpf.c's move_unknown). */
static __always_inline void resolve_pending(const struct sk_buff *skb, __u32 owner)
{
	__u64 key = (__u64)skb;
	struct zc_owner_pending *p = bpf_map_lookup_elem(&pending, &key);

	if (!p)
		return;
	add(p->gen, owner, ZC_OWNER_CTX_NET_RX, 0, 0, p->ns);
	add(p->gen, ZC_OWNER_UNKNOWN, ZC_OWNER_CTX_NET_RX, 0, 0, -p->ns);
	bpf_map_delete_elem(&pending, &key);
}

static __always_inline int on_netif_receive_skb(const struct sk_buff *skb)
{
	struct zc_cpu *c = acct_cpu();
	struct zc_owner_seg *s = this_seg();
	__u64 now;

	if (!c || !s || !in_net_rx(c))
		return 0;
	now = bpf_ktime_get_ns();
	close_seg(s, now);
	s->open = 1;
	s->start = now;
	s->skb = (__u64)skb;
	s->gen = current_gen(c);
	s->owner = ZC_OWNER_UNKNOWN;
	return 0;
}

static __always_inline int on_softirq_exit(unsigned int vec)
{
	struct zc_owner_seg *s;

	if (vec != NET_RX_SOFTIRQ)
		return 0;
	s = this_seg();
	if (s)
		close_seg(s, bpf_ktime_get_ns());
	return 0;
}

/* Payload bytes of this segment not received before. Payload = skb->len -
 * TCP header (skb->data is the TCP header here), as the classic
 * tracepoint's data_len without its u16 truncation (loopback skbs carry up
 * to 64 KiB). Only bytes at or past rcv_nxt are new: on a 2-CPU loopback,
 * segments queued to two CPUs' backlogs arrive reordered, and the sender
 * retransmits some (DSACK, TCPSACKReorder), which are processed again. */
static __always_inline __u32 new_payload(struct sock *sk, const struct sk_buff *skb)
{
	struct tcp_skb_cb *cb = (struct tcp_skb_cb *)&skb->cb[0];
	unsigned char *data = BPF_CORE_READ(skb, data);
	__u32 len = BPF_CORE_READ(skb, len);
	__u32 seq = BPF_CORE_READ(cb, seq);
	__u32 rcv_nxt = BPF_CORE_READ((struct tcp_sock *)sk, rcv_nxt);
	__u8 doff = 0;
	__u32 from;

	bpf_probe_read_kernel(&doff, 1, data + 12);
	doff = (doff >> 4) * 4;
	if (len <= doff)
		return 0;
	len -= doff;
	from = (__s32)(rcv_nxt - seq) > 0 ? rcv_nxt : seq;
	return (__s32)(seq + len - from) > 0 ? seq + len - from : 0;
}

static __always_inline int on_tcp_probe(struct sock *sk, const struct sk_buff *skb)
{
	__u64 cookie = BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
	__u32 *tag = cookie ? bpf_map_lookup_elem(&owners, &cookie) : NULL;
	__u32 owner = tag ? *tag : ZC_OWNER_OTHER;
	struct zc_cpu *c = acct_cpu();
	struct zc_owner_seg *s;
	__u8 ctx;

	if (!c)
		return 0;
	if (in_net_rx(c)) {
		ctx = ZC_OWNER_CTX_NET_RX;
		s = this_seg();
		if (s && s->open && s->owner == ZC_OWNER_UNKNOWN)
			s->owner = owner;
	} else {
		ctx = c->depth == 0 ? ZC_OWNER_CTX_TASK : ZC_OWNER_CTX_OTHER;
	}
	if (!tag)
		return 0; /* other sockets' backlogs: unattributed either way */
	if (ctx != ZC_OWNER_CTX_NET_RX)
		resolve_pending(skb, owner);
	add(current_gen(c), owner, ctx, 1, new_payload(sk, skb), 0);
	return 0;
}

/* ---- tp_btf ---- */

SEC("tp_btf/netif_receive_skb")
int BPF_PROG(btf_own_netif_rx, struct sk_buff *skb) { return on_netif_receive_skb(skb); }

SEC("tp_btf/softirq_exit")
int BPF_PROG(btf_own_sirq_exit, unsigned int vec) { return on_softirq_exit(vec); }

SEC("tp_btf/tcp_probe")
int BPF_PROG(btf_own_tcp_probe, struct sock *sk, const struct sk_buff *skb) { return on_tcp_probe(sk, skb); }

/* ---- raw_tp ---- */

SEC("raw_tp/netif_receive_skb")
int BPF_PROG(raw_own_netif_rx, struct sk_buff *skb) { return on_netif_receive_skb(skb); }

SEC("raw_tp/softirq_exit")
int BPF_PROG(raw_own_sirq_exit, unsigned int vec) { return on_softirq_exit(vec); }

SEC("raw_tp/tcp_probe")
int BPF_PROG(raw_own_tcp_probe, struct sock *sk, const struct sk_buff *skb) { return on_tcp_probe(sk, skb); }
