//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/* Whose work is the NET_RX softirq a thread runs?
 *
 * On loopback and veth, receive processing runs in whichever task re-enables
 * bottom halves (local_bh_enable after the transmit): the sender processes the receiver's data
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
 * triggers (the accounting's softirq_exit handler closes the last one:
 * owner_split.h). An skb queued to a socket's backlog (its owner is inside a
 * syscall) reaches tcp_probe only later, from the owner's release_sock: its
 * segment is kept in `owner_pending` (a slot by skb address), counted as
 * unattributed, and moved to the owner when that tcp_probe comes. (An skb the backlog
 * coalesces into its tail is freed unprobed and stays unattributed.)
 *
 * Owners are socket cookies registered from user space (SO_COOKIE).
 * Segments and payload bytes are also counted per (thread, owner, context)
 * for every registered socket, in softirq or not, which makes the byte
 * count checkable: every payload byte is received once. Bytes counted for a
 * segment that TCP then drops (skb:kfree_skb) are taken back: under receive
 * memory pressure the dropped data comes again as a retransmission. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "common.h"
#include "owner_split.h"

char LICENSE[] SEC("license") = "GPL";

#define ZC_TCPHDR_FIN 0x01 /* TCPHDR_FIN and _SYN, macros the BTF does not carry */
#define ZC_TCPHDR_SYN 0x02

/* cookie -> owner tag (>= ZC_OWNER_FIRST). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __u32);
} owners SEC(".maps");

/* The last segment tcp_probe counted bytes for on this CPU. If the stack
 * then drops it (receive memory full, beyond the window, a duplicate of
 * queued out-of-order data), those bytes were not received: its
 * retransmission will be counted again. Matched by skb address and
 * sequence range, so that a recycled skb address cannot match. */
struct zc_owner_probe {
	__u64 skb;
	__u32 seq;
	__u32 end_seq;
	__u32 gen;
	__u32 owner;
	__u32 bytes;
	__u8 ctx;
	__u8 stashed; /* its bytes wait in the open segment (zc_owner_seg) */
	__u8 pad[2];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct zc_owner_probe);
} owner_probes SEC(".maps");

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

/* A backlogged skb reached tcp_rcv_established: its NET_RX time moves from
 * unattributed to its owner. Per-CPU values, so the subtraction is modular
 * (user space sums u64s, as in accounting.bpf.c's move_unknown). */
static __always_inline void resolve_pending(const struct sk_buff *skb, __u32 owner)
{
	struct zc_owner_seg *s = this_seg();
	struct zc_owner_pending *p;
	__u64 ns, id;
	__u32 gen;

	if (!s)
		return;
	/* The address as a number: the verifier allows no arithmetic on a
	 * typed pointer, and one stored in a map comes back as a scalar. */
	s->id = (__u64)skb;
	asm volatile("" ::: "memory"); /* load it back from the map */
	id = s->id;
	p = pending_slot(id);
	if (!p || p->skb != id)
		return;
	gen = p->gen;
	ns = p->ns;
	p->skb = 0;
	add_owner(gen, owner, ZC_OWNER_CTX_NET_RX, 0, 0, ns);
	add_owner(gen, ZC_OWNER_UNKNOWN, ZC_OWNER_CTX_NET_RX, 0, 0, -ns);
}

static __always_inline int on_netif_receive_skb(const struct sk_buff *skb)
{
	struct zc_cpu *c = this_cpu();
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
	s->segs = 0;
	s->bytes = 0;
	return 0;
}

/* What tcp_probe needs of a segment and its socket. */
struct seg_facts {
	__u64 cookie;  /* the socket's, 0 if it has none yet */
	__u32 seq;     /* TCP_SKB_CB(skb): sequence range, SYN and FIN included */
	__u32 end_seq;
	__u32 rcv_nxt; /* the socket's next expected byte */
	__u8 flags;    /* TCP_SKB_CB(skb)->tcp_flags */
};

/* raw_tp (and 6.1): untyped arguments, read with probe reads. */
static __always_inline void read_facts(struct sock *sk, const struct sk_buff *skb, struct seg_facts *f)
{
	struct tcp_skb_cb *cb = (struct tcp_skb_cb *)&skb->cb[0];

	f->cookie = BPF_CORE_READ(sk, __sk_common.skc_cookie.counter);
	f->seq = BPF_CORE_READ(cb, seq);
	f->end_seq = BPF_CORE_READ(cb, end_seq);
	f->flags = BPF_CORE_READ(cb, tcp_flags);
	f->rcv_nxt = BPF_CORE_READ((struct tcp_sock *)sk, rcv_nxt);
}

/* tp_btf: the same as plain loads (one probe read cost 50-70 ns on our
 * guests, and this runs for every TCP segment the host receives). */
static __always_inline void load_facts(struct sock *sk, const struct sk_buff *skb, struct seg_facts *f)
{
	struct tcp_skb_cb *cb;
	struct tcp_sock *tp;

	if (!bpf_rdonly_cast) {
		read_facts(sk, skb, f);
		return;
	}
	cb = bpf_rdonly_cast((void *)skb->cb, bpf_core_type_id_kernel(struct tcp_skb_cb));
	tp = bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct tcp_sock));
	f->cookie = sk->__sk_common.skc_cookie.counter;
	f->seq = cb->seq;
	f->end_seq = cb->end_seq;
	/* One byte, volatile: clang otherwise loads tcp_flags and the next
	 * byte as one u16, which 6.12's verifier refuses (a load across two
	 * members of the struct). */
	f->flags = *(volatile __u8 *)&cb->tcp_flags;
	f->rcv_nxt = tp->rcv_nxt;
}

/* Payload bytes of this segment not received before: its range less SYN
 * and FIN (end_seq counts them), from rcv_nxt on. Only bytes at or past
 * rcv_nxt are new: on a 2-CPU loopback, segments queued to two CPUs'
 * backlogs arrive reordered, and the sender retransmits some (DSACK,
 * TCPSACKReorder), which are processed again. */
static __always_inline __u32 new_payload(const struct seg_facts *f)
{
	__u32 start = f->seq + !!(f->flags & ZC_TCPHDR_SYN);
	__u32 end = f->end_seq - !!(f->flags & ZC_TCPHDR_FIN);
	__u32 from;

	if ((__s32)(end - start) <= 0)
		return 0;
	from = (__s32)(f->rcv_nxt - start) > 0 ? f->rcv_nxt : start;
	return (__s32)(end - from) > 0 ? end - from : 0;
}

static __always_inline struct zc_owner_probe *this_probe(void) { return only_slot(&owner_probes); }

static __always_inline __u8 owner_ctx(struct zc_cpu *c)
{
	if (in_net_rx(c))
		return ZC_OWNER_CTX_NET_RX;
	return c->depth == 0 ? ZC_OWNER_CTX_TASK : ZC_OWNER_CTX_OTHER;
}

static __always_inline int on_tcp_probe(const struct seg_facts *f, const struct sk_buff *skb)
{
	__u64 cookie = f->cookie;
	__u32 *tag = cookie ? bpf_map_lookup_elem(&owners, &cookie) : NULL;
	__u32 owner = tag ? *tag : ZC_OWNER_OTHER;
	struct zc_cpu *c = this_cpu();
	struct zc_owner_probe *p;
	struct zc_owner_seg *s = NULL;
	__u32 bytes, gen;
	__u8 ctx, stashed = 0;

	if (!c)
		return 0;
	ctx = owner_ctx(c);
	if (ctx == ZC_OWNER_CTX_NET_RX) {
		s = this_seg();
		if (s && s->open && s->owner == ZC_OWNER_UNKNOWN)
			s->owner = owner;
	}
	if (!tag)
		return 0; /* other sockets' backlogs: unattributed either way */
	if (ctx != ZC_OWNER_CTX_NET_RX)
		resolve_pending(skb, owner);
	bytes = new_payload(f);
	gen = current_gen(c);
	/* The open segment's own skb and key: counted with its time at
	 * close. */
	if (s && s->open && s->skb == (__u64)skb && s->owner == owner && s->gen == gen) {
		s->segs++;
		s->bytes += bytes;
		stashed = 1;
	} else {
		add_owner(gen, owner, ctx, 1, bytes, 0);
	}
	p = this_probe();
	if (p && !bytes) {
		p->skb = 0; /* nothing counted, nothing to take back */
	} else if (p) {
		p->skb = (__u64)skb;
		p->seq = f->seq;
		p->end_seq = f->end_seq;
		p->gen = gen;
		p->owner = owner;
		p->bytes = bytes;
		p->ctx = ctx;
		p->stashed = stashed;
	}
	return 0;
}

/* Drop reasons (CO-RE: the enum's values differ between kernels; -1 where
 * a kernel lacks one) under which TCP frees an skb of its out-of-order
 * queue: pruned under memory pressure, replaced by a segment that covers
 * it, or made redundant by in-order data that covered it. Such an skb was
 * counted in full when it arrived (all of it was past rcv_nxt), and its
 * bytes will be counted again from the segment that does deliver them. */
static __always_inline int ofo_drop_reason(int reason)
{
	if (bpf_core_enum_value_exists(enum skb_drop_reason, SKB_DROP_REASON_TCP_OFO_QUEUE_PRUNE) &&
	    reason == bpf_core_enum_value(enum skb_drop_reason, SKB_DROP_REASON_TCP_OFO_QUEUE_PRUNE))
		return 1;
	if (bpf_core_enum_value_exists(enum skb_drop_reason, SKB_DROP_REASON_TCP_OFOMERGE) &&
	    reason == bpf_core_enum_value(enum skb_drop_reason, SKB_DROP_REASON_TCP_OFOMERGE))
		return 1;
	if (bpf_core_enum_value_exists(enum skb_drop_reason, SKB_DROP_REASON_TCP_OFO_DROP) &&
	    reason == bpf_core_enum_value(enum skb_drop_reason, SKB_DROP_REASON_TCP_OFO_DROP))
		return 1;
	return 0;
}

/* skb:kfree_skb (drops only; consumed skbs go to consume_skb): take back
 * the bytes counted for a segment that was not received after all. */
static __always_inline int on_kfree_skb(const struct sk_buff *skb, int reason)
{
	struct tcp_skb_cb *cb = (struct tcp_skb_cb *)&skb->cb[0];
	struct zc_owner_probe *p = this_probe();
	struct zc_cpu *c;
	struct sock *sk;
	__u64 cookie;
	__u32 *tag, seq, end_seq;

	if (!p)
		return 0;
	if (p->skb == (__u64)skb) {
		/* The segment tcp_probe just counted, dropped while TCP
		 * processed it. */
		struct zc_owner_seg *s = p->stashed ? this_seg() : NULL;

		p->skb = 0;
		if (BPF_CORE_READ(cb, seq) != p->seq || BPF_CORE_READ(cb, end_seq) != p->end_seq)
			return 0;
		/* Still waiting in the segment (the drop comes inside it):
		 * taken back there, so no reading sees the subtraction first. */
		if (s && s->open && s->skb == (__u64)skb && s->bytes >= p->bytes)
			s->bytes -= p->bytes;
		else
			add_owner(p->gen, p->owner, p->ctx, 0, -(__u64)p->bytes, 0);
		return 0;
	}
	if (!ofo_drop_reason(reason))
		return 0;
	sk = BPF_CORE_READ(skb, sk);
	cookie = sk ? BPF_CORE_READ(sk, __sk_common.skc_cookie.counter) : 0;
	tag = cookie ? bpf_map_lookup_elem(&owners, &cookie) : NULL;
	c = this_cpu();
	if (!tag || !c)
		return 0;
	seq = BPF_CORE_READ(cb, seq);
	end_seq = BPF_CORE_READ(cb, end_seq);
	if (BPF_CORE_READ(cb, tcp_flags) & ZC_TCPHDR_FIN)
		end_seq--;
	if ((__s32)(end_seq - seq) > 0)
		add_owner(current_gen(c), *tag, owner_ctx(c), 0, -(__u64)(end_seq - seq), 0);
	return 0;
}

/* ---- tp_btf ---- */

SEC("tp_btf/netif_receive_skb")
int PROBE_PROG_EST(FEST_OWN_NETIF_RX, btf_own_netif_rx, struct sk_buff *skb) { return on_netif_receive_skb(skb); }

SEC("tp_btf/tcp_probe")
int PROBE_PROG_EST(FEST_OWN_TCP_PROBE, btf_own_tcp_probe, struct sock *sk, const struct sk_buff *skb)
{
	struct seg_facts f;

	load_facts(sk, skb, &f);
	return on_tcp_probe(&f, skb);
}

SEC("tp_btf/kfree_skb")
int PROBE_PROG(btf_own_kfree_skb, struct sk_buff *skb, void *location, int reason) { return on_kfree_skb(skb, reason); }

/* ---- raw_tp ---- */

SEC("raw_tp/netif_receive_skb")
int PROBE_PROG_EST(FEST_OWN_NETIF_RX, raw_own_netif_rx, struct sk_buff *skb) { return on_netif_receive_skb(skb); }

SEC("raw_tp/tcp_probe")
int PROBE_PROG_EST(FEST_OWN_TCP_PROBE, raw_own_tcp_probe, struct sock *sk, const struct sk_buff *skb)
{
	struct seg_facts f;

	read_facts(sk, skb, &f);
	return on_tcp_probe(&f, skb);
}

SEC("raw_tp/kfree_skb")
int PROBE_PROG(raw_own_kfree_skb, struct sk_buff *skb, void *location, int reason) { return on_kfree_skb(skb, reason); }
