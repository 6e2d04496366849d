//go:build ignore

// SPDX-License-Identifier: GPL-2.0
/* Byte classes: what the kernel did with the bytes the target threads sent
 * and received: copied, spliced, pinned (zero-copy) or copied later on the
 * way out (loopback, veth, taps). Exact counts, no sampling.
 *
 * Send: every sock_sendmsg on a TCP socket ends in sock:sock_send_length
 * with the bytes it moved; those bytes get the class of the decision
 * tcp_sendmsg_locked took for that call. On 6.16+ tcp:tcp_sendmsg_locked
 * shows the decision's inputs; it fires once per loop iteration, but the
 * decision is made once per call before the loop, so every iteration
 * yields the same class and the last one wins. Older kernels (fallback,
 * also selectable here): the class comes from the syscall path (accounting),
 * the socket's own SOCK_ZEROCOPY flag and route caps, and the io_uring
 * opcode that was submitted for the socket.
 *
 * Later: zero-copy skbs that reach local delivery (netif_receive_skb) are
 * copied by skb_copy_ubufs; packet taps copy them at transmit; the error
 * queue and io_uring notifications report COPIED. Receive: bytes copied to
 * user (skb_copy_datagram_iovec) and mapped by TCP_ZEROCOPY_RECEIVE.
 *
 * Everything is counted per (accounting thread generation, path, class).
 * Work done in softirq on behalf of a sender is billed to the thread that
 * owns the flow, remembered at its zero-copy sends. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "common.h"
#include "zcb_stats.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the loader on kernels whose packet taps on every device live in
 * one global list (ptype_all, net_hotdata.ptype_all before it moved into
 * struct net): that list_head's address, from kallsyms and BTF. */
const volatile __u64 cfg_ptype_all = 0;


#define ZCB_MSG_ZEROCOPY 0x4000000
#define ZCB_MSG_SPLICE_PAGES 0x8000000
#define ZCB_IPPROTO_TCP 6
#define ZCB_AF_INET 2
#define ZCB_AF_INET6 10
#define ZCB_ETH_P_IP 0x0800
#define ZCB_ETH_P_IPV6 0x86DD
#define ZCB_NETIF_F_SG (1ULL << 0)
#define ZCB_IFF_LOOPBACK 0x8
#define ZCB_SKBFL_ZEROCOPY_ENABLE 0x1
#define ZCB_O_DIRECT 040000
#define ZCB_S_DAX (1 << 13)
#define ZCB_SO_EE_ORIGIN_ZEROCOPY 5
#define ZCB_SO_EE_CODE_ZEROCOPY_COPIED 1
#define ZCB_IORING_CQE_F_NOTIF (1U << 3)
#define ZCB_IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#define ZCB_REQ_F_FIXED_FILE 1ULL
#define ZCB_SOL_TCP 6
#define ZCB_TCP_ZEROCOPY_RECEIVE 35

/* UAPI opcode numbers: stable across versions. */
enum {
	ZCB_OP_SENDMSG = 9, ZCB_OP_SEND = 26, ZCB_OP_SEND_ZC = 47, ZCB_OP_SENDMSG_ZC = 48,
};


/* The send decision of the thread's current sock_sendmsg. */
struct zcb_task {
	__u64 sk;
	__u8 class;
	__u8 armed;
	__u8 pad[6];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct zcb_task);
} zcb_tasks SEC(".maps");

/* Kernels without sock_send_length (classic send-syscall tracepoints), by
 * tid: the send's TCP socket and the syscall's path, from entry to exit. */
struct zcb_sys {
	__u64 sk;
	__u8 path;
	__u8 pad[7];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct zcb_sys);
} zcb_sys SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct zcb_flow);
	__type(value, struct zcb_owner);
} zcb_owners SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct zcb_flow);
	__type(value, struct zcb_pending);
} zcb_pending SEC(".maps");

/* Fallback only: socket -> 1 if its last io_uring send was SEND_ZC. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, __u8);
} zcb_uring_sk SEC(".maps");

/* The socket helpers below read with BPF_CORE_READ: they also serve the
 * syscall-exit path of kernels without sock_send_length (6.1), where the
 * socket pointer comes from the fd table untyped. They run once per send
 * call, not per skb. */
static __always_inline int route_sg(const struct sock *sk)
{
	return (BPF_CORE_READ(sk, sk_route_caps) & ZCB_NETIF_F_SG) != 0;
}

static __always_inline int sock_zerocopy(const struct sock *sk)
{
	/* sock_flag(sk, SOCK_ZEROCOPY); sk_flags is a macro for this. */
	return (BPF_CORE_READ(sk, __sk_common.skc_flags) >> bpf_core_enum_value(enum sock_flags, SOCK_ZEROCOPY)) & 1;
}

/* ---- flows and their owners ---- */

static __always_inline int flow_of_sk(const struct sock *sk, struct zcb_flow *f)
{
	f->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	f->dport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (BPF_CORE_READ(sk, __sk_common.skc_family) == ZCB_AF_INET6) {
		struct in6_addr d = BPF_CORE_READ(sk, __sk_common.skc_v6_daddr);

		/* A v4-mapped peer: the packets are IPv4. */
		if (!(d.in6_u.u6_addr32[0] == 0 && d.in6_u.u6_addr32[1] == 0 &&
		      d.in6_u.u6_addr32[2] == bpf_htonl(0xffff))) {
			struct in6_addr s = BPF_CORE_READ(sk, __sk_common.skc_v6_rcv_saddr);

			f->family = 6;
#pragma unroll
			for (int i = 0; i < 4; i++) {
				f->saddr[i] = s.in6_u.u6_addr32[i];
				f->daddr[i] = d.in6_u.u6_addr32[i];
			}
			return 0;
		}
	} else if (BPF_CORE_READ(sk, __sk_common.skc_family) != ZCB_AF_INET) {
		return -1;
	}
	f->family = 4;
	f->saddr[0] = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
	f->daddr[0] = BPF_CORE_READ(sk, __sk_common.skc_daddr);
	return 0;
}

/* The flow of a received packet: skb->data is the network header here
 * (the driver pulled the link header with eth_type_trans). */
static __always_inline int flow_of_packet(const struct sk_buff *skb, struct zcb_flow *f)
{
	unsigned char *data = skb->data;
	__u16 proto = bpf_ntohs(skb->protocol);
	__u32 h[10] = {};
	__u16 ports[2] = {};
	__u32 l4;

	if (proto == ZCB_ETH_P_IP) {
		if (bpf_probe_read_kernel(h, 20, data))
			return -1;
		if (((h[2] >> 8) & 0xff) != ZCB_IPPROTO_TCP) /* byte 9: protocol */
			return -1;
		l4 = (h[0] & 0xf) * 4; /* byte 0 low nibble: ihl */
		f->family = 4;
		f->saddr[0] = h[3];
		f->daddr[0] = h[4];
	} else if (proto == ZCB_ETH_P_IPV6) {
		if (bpf_probe_read_kernel(h, 40, data))
			return -1;
		if (((h[1] >> 16) & 0xff) != ZCB_IPPROTO_TCP) /* byte 6: next header */
			return -1;
		l4 = 40;
		f->family = 6;
#pragma unroll
		for (int i = 0; i < 4; i++) {
			f->saddr[i] = h[2 + i];
			f->daddr[i] = h[6 + i];
		}
	} else {
		return -1;
	}
	if (bpf_probe_read_kernel(ports, sizeof(ports), data + (l4 & 0x3c)))
		return -1;
	f->sport = bpf_ntohs(ports[0]);
	f->dport = bpf_ntohs(ports[1]);
	return 0;
}

static __always_inline void remember_owner(const struct sock *sk, __u32 gen, __u8 path)
{
	struct zcb_flow f = {};
	struct zcb_owner *o;

	if (flow_of_sk(sk, &f))
		return;
	o = bpf_map_lookup_elem(&zcb_owners, &f);
	if (o) {
		if (o->gen != gen || o->path != path) {
			o->gen = gen;
			o->path = path;
		}
		return;
	}
	struct zcb_owner n = { .gen = gen, .path = path };
	bpf_map_update_elem(&zcb_owners, &f, &n, BPF_NOEXIST);

	struct zcb_pending *p = bpf_map_lookup_elem(&zcb_pending, &f);
	if (!p)
		return;
#pragma unroll
	for (int i = 0; i < ZCB_NR_DEFERRED; i++)
		if (p->events[i])
			add_class(gen, path, ZCB_DEFERRED_LOOPBACK + i, p->bytes[i], p->events[i]);
	bpf_map_delete_elem(&zcb_pending, &f);
}

/* Deferred-copy bytes of a flow, to its owner or kept until it is known. */
static __always_inline void add_deferred(struct zcb_flow *f, __u8 class, __u64 bytes)
{
	struct zcb_owner *o = bpf_map_lookup_elem(&zcb_owners, f);
	struct zcb_pending *p;
	__u32 i = masked(class - ZCB_DEFERRED_LOOPBACK, ZCB_NR_DEFERRED - 1);

	if (o) {
		add_class(o->gen, o->path, class, bytes, 1);
		return;
	}
	p = bpf_map_lookup_elem(&zcb_pending, f);
	if (!p) {
		struct zcb_pending zero = {};
		bpf_map_update_elem(&zcb_pending, f, &zero, BPF_NOEXIST);
		p = bpf_map_lookup_elem(&zcb_pending, f);
		if (!p)
			return;
	}
	__sync_fetch_and_add(&p->bytes[i], bytes);
	__sync_fetch_and_add(&p->events[i], 1);
}

/* ---- per-thread syscall state ---- */

static __always_inline struct zcb_sys *sys_state(int create)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct zcb_sys *s = bpf_map_lookup_elem(&zcb_sys, &tid);

	if (s || !create)
		return s;
	struct zcb_sys zero = {};
	bpf_map_update_elem(&zcb_sys, &tid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&zcb_sys, &tid);
}

/* ---- send decision ---- */

/* tcp_sendmsg_locked's choice of zc (net/ipv4/tcp.c), before its loop. */
static __always_inline __u8 decide(const struct sock *sk, const struct msghdr *msg)
{
	unsigned int flags = msg->msg_flags;
	__u64 ubuf = 0;

	if (flags & ZCB_MSG_ZEROCOPY) {
		/* A plain load of msg_ubuf got fused by clang into a bitwise
		 * op on the pointer that the verifier rejects. */
		bpf_probe_read_kernel(&ubuf, sizeof(ubuf), &msg->msg_ubuf);
		if (!ubuf && !sock_zerocopy(sk))
			return ZCB_TX_COPY_ZC_IGNORED;
		return route_sg(sk) ? ZCB_TX_PINNED : ZCB_TX_COPY_NO_SG;
	}
	if (flags & ZCB_MSG_SPLICE_PAGES)
		return route_sg(sk) ? ZCB_TX_SPLICE : ZCB_TX_COPY_NO_SG;
	return ZCB_TX_COPY;
}

/* kTLS (software) copies and encrypts the user's bytes into records of its
 * own and hands those to tcp_sendmsg_locked with MSG_SPLICE_PAGES, for a
 * plain write() too: the splice there is of its own pages. (Not testable on
 * our kernels: no CONFIG_TLS.) */
static __always_inline int has_ulp(const struct sock *sk)
{
	return BPF_CORE_READ((struct inet_connection_sock *)sk, icsk_ulp_ops) != NULL;
}

/* Without tcp_sendmsg_locked: the same decision from what the syscall was
 * (the accounting's path) and the socket's state now. io_uring sends run
 * in io_uring_enter, in io-wq workers, or from task_work on any return to
 * user space (a retry after EAGAIN): whatever the path, a socket io_uring
 * was last asked to send on is an io_uring send. */
static __always_inline __u8 decide_fallback(__u8 path, const struct sock *sk)
{
	__u64 key = (__u64)sk;
	__u8 *zc;

	switch (path) {
	case PATH_TX_WRITE:
		return ZCB_TX_COPY;
	case PATH_TX_SENDFILE:
	case PATH_TX_SPLICE:
		return route_sg(sk) ? ZCB_TX_SPLICE : ZCB_TX_COPY_NO_SG;
	case PATH_TX_MSG_ZEROCOPY:
		if (!sock_zerocopy(sk))
			return ZCB_TX_COPY_ZC_IGNORED;
		return route_sg(sk) ? ZCB_TX_PINNED : ZCB_TX_COPY_NO_SG;
	}
	zc = bpf_map_lookup_elem(&zcb_uring_sk, &key);
	if (!zc)
		return ZCB_TX_UNCLASSIFIED;
	if (!*zc)
		return ZCB_TX_COPY;
	return route_sg(sk) ? ZCB_TX_PINNED : ZCB_TX_COPY_NO_SG;
}

/* Count one send's bytes; class 0xff: not seen in tcp_sendmsg_locked. */
static __always_inline void account_send(__u32 gen, __u8 path, const struct sock *sk, __u8 class,
					 long bytes)
{
	if (class == 0xff)
		class = decide_fallback(path, sk);
	if (class == ZCB_TX_SPLICE && has_ulp(sk))
		class = ZCB_TX_COPY_ULP;
	/* A source read into new pages first (noted by the accounting's
	 * sys_enter at sendfile and splice: source_cannot_splice). */
	else if (class == ZCB_TX_SPLICE && (path == PATH_TX_SENDFILE || path == PATH_TX_SPLICE) && current_src_copy())
		class = ZCB_TX_SPLICE_SRC_COPY;
	add_class(gen, path, class, bytes, 1);
	if (class == ZCB_TX_PINNED)
		remember_owner(sk, gen, path);
}

SEC("tp_btf/tcp_sendmsg_locked")
int PROBE_PROG_EST(FEST_ZCB_SENDMSG, zcb_tcp_sendmsg_locked, const struct sock *sk, const struct msghdr *msg,
	     const struct sk_buff *skb, int size_goal)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct zcb_task *st = bpf_task_storage_get(&zcb_tasks, task, 0, 0);

	if (!st) {
		if (!current_thread())
			return 0;
		st = bpf_task_storage_get(&zcb_tasks, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!st)
			return 0;
	}
	st->class = decide(sk, msg);
	st->sk = (__u64)sk;
	st->armed = 1;
	return 0;
}

/* The bytes of one sock_sendmsg, after tcp_sendmsg returned. */
SEC("tp_btf/sock_send_length")
int PROBE_PROG_EST(FEST_ZCB_SEND_LENGTH, zcb_sock_send_length, struct sock *sk, int ret, int flags)
{
	struct zcb_task *st;
	__u8 class = 0xff, path;
	__u32 gen;

	if (!sock_is_tcp(sk))
		return 0;
	st = bpf_task_storage_get(&zcb_tasks, bpf_get_current_task_btf(), 0, 0);
	if (st && st->armed) {
		/* Consumed here whatever ret is, so that a failed call's
		 * decision never labels the next one. */
		if (st->sk == (__u64)sk)
			class = st->class;
		st->armed = 0;
	}
	if (ret <= 0)
		return 0;
	gen = current_target(&path);
	if (gen)
		account_send(gen, path, sk, class, ret);
	return 0;
}

/* Fallback only: which kind of send io_uring was asked for, per socket.
 * req->file is assigned at issue, after this tracepoint: use the fd. */
static __always_inline int on_uring_submit(struct io_kiocb *req)
{
	__u8 op = BPF_CORE_READ(req, opcode), zc;
	struct sock *sk;
	__u64 key;

	if (op == ZCB_OP_SEND_ZC || op == ZCB_OP_SENDMSG_ZC)
		zc = 1;
	else if (op == ZCB_OP_SEND || op == ZCB_OP_SENDMSG)
		zc = 0;
	else
		return 0;
	if ((BPF_CORE_READ(req, flags) & ZCB_REQ_F_FIXED_FILE) || !current_thread())
		return 0; /* fixed files: not resolvable here */
	sk = fd_tcp_sock(BPF_CORE_READ(req, cqe.fd));
	if (!sk)
		return 0;
	key = (__u64)sk;
	bpf_map_update_elem(&zcb_uring_sk, &key, &zc, BPF_ANY);
	return 0;
}

SEC("tp_btf/io_uring_submit_req")
int PROBE_PROG(zcb_uring_submit, struct io_kiocb *req)
{
	return on_uring_submit(req);
}

/* Its name before 6.4 (same first argument). */
SEC("tp_btf/io_uring_submit_sqe")
int PROBE_PROG(zcb_uring_submit_sqe, struct io_kiocb *req)
{
	return on_uring_submit(req);
}

/* ---- syscalls (classic tracepoints: they fire only for their syscall) ---- */

struct zcb_sys_enter {
	__u64 common;
	__s32 nr;
	__s32 pad;
	__u64 args[6];
};

struct zcb_sys_exit {
	__u64 common;
	__s32 nr;
	__s32 pad;
	__s64 ret;
};

/* ---- sends from syscall returns: kernels without sock_send_length (< 6.3) ----
 * The socket is resolved at entry, the bytes are the syscall's return
 * value. io_uring sends return no bytes to a syscall: not classified. */

/* The path is the syscall's own (as the accounting classifies it): the
 * order of the accounting's sys_enter and these per-syscall events is the
 * order their probes were first registered, which other tools change. */
static __always_inline void send_enter(long fd, __u8 path)
{
	struct zc_thread *t = current_thread();
	struct zcb_sys *s;
	struct sock *sk;

	if (!t)
		return;
	sk = fd_tcp_sock(fd);
	s = sys_state(sk != NULL);
	if (!s)
		return;
	s->sk = (__u64)sk;
	s->path = path;
}

static __always_inline void send_exit(long ret)
{
	struct zcb_sys *s = sys_state(0);
	struct sock *sk;
	__u32 gen;
	__u8 path;

	if (!s || !s->sk)
		return;
	sk = (struct sock *)s->sk;
	s->sk = 0;
	if (ret <= 0)
		return;
	gen = current_target(&path);
	if (gen)
		account_send(gen, s->path, sk, 0xff, ret);
}

#define ZCB_SEND_SYSCALL(name, fdarg, path)                                   \
	SEC("tracepoint/syscalls/sys_enter_" #name)                           \
	int PROBE_TP(zcb_se_##name, struct zcb_sys_enter)                        \
	{                                                                     \
		send_enter((int)ctx->args[fdarg], path);                      \
		return 0;                                                     \
	}                                                                     \
	SEC("tracepoint/syscalls/sys_exit_" #name)                            \
	int PROBE_TP(zcb_sx_##name, struct zcb_sys_exit)                        \
	{                                                                     \
		send_exit(ctx->ret);                                          \
		return 0;                                                     \
	}

ZCB_SEND_SYSCALL(write, 0, PATH_TX_WRITE)
ZCB_SEND_SYSCALL(writev, 0, PATH_TX_WRITE)
ZCB_SEND_SYSCALL(sendto, 0, ctx->args[3] & ZCB_MSG_ZEROCOPY ? PATH_TX_MSG_ZEROCOPY : PATH_TX_WRITE)
ZCB_SEND_SYSCALL(sendmsg, 0, ctx->args[2] & ZCB_MSG_ZEROCOPY ? PATH_TX_MSG_ZEROCOPY : PATH_TX_WRITE)
ZCB_SEND_SYSCALL(sendfile64, 0, PATH_TX_SENDFILE)
ZCB_SEND_SYSCALL(splice, 2, PATH_TX_SPLICE)

/* ---- deferred copies ---- */

static __always_inline __u8 shinfo_flags(const struct sk_buff *skb)
{
	unsigned char *shinfo = skb->head + skb->end; /* end is an offset on 64-bit */
	__u8 flags = 0;

	if (bpf_rdonly_cast) {
		struct skb_shared_info *sh =
			bpf_rdonly_cast(shinfo, bpf_core_type_id_kernel(struct skb_shared_info));
		return sh->flags;
	}
	bpf_probe_read_kernel(&flags, sizeof(flags),
			      shinfo + bpf_core_field_offset(struct skb_shared_info, flags));
	return flags;
}

static __always_inline __u8 deferred_class(const struct net_device *dev)
{
	const struct rtnl_link_ops *ops;
	char kind[5] = {};

	if (!dev)
		return ZCB_DEFERRED_OTHER;
	if (dev->flags & ZCB_IFF_LOOPBACK)
		return ZCB_DEFERRED_LOOPBACK;
	ops = dev->rtnl_link_ops;
	if (ops && !bpf_probe_read_kernel(kind, sizeof(kind), ops->kind) &&
	    kind[0] == 'v' && kind[1] == 'e' && kind[2] == 't' && kind[3] == 'h' && kind[4] == 0)
		return ZCB_DEFERRED_VETH;
	return ZCB_DEFERRED_OTHER;
}

/* A zero-copy skb on the receive path will be copied by skb_copy_ubufs in
 * ip_local_deliver_finish (skb_orphan_frags_rx): all of its paged bytes. */
SEC("tp_btf/netif_receive_skb")
int PROBE_PROG_EST(FEST_ZCB_NETIF_RX, zcb_netif_receive_skb, struct sk_buff *skb)
{
	struct zcb_flow f = {};
	__u32 bytes;

	if (!(shinfo_flags(skb) & ZCB_SKBFL_ZEROCOPY_ENABLE))
		return 0;
	bytes = skb->data_len;
	if (!bytes || flow_of_packet(skb, &f))
		return 0;
	add_deferred(&f, deferred_class(skb->dev), bytes);
	return 0;
}

/* dev_nit_active: a packet socket listens on this device or namespace. */
static __always_inline int tap_active(const struct net_device *dev)
{
	/* Typed loads; an empty list points at itself. */
	if ((__u64)dev->ptype_all.next != (__u64)&dev->ptype_all)
		return 1;
	if (bpf_core_field_exists(struct net, ptype_all)) {
		/* Per namespace in newer kernels (global before). */
		struct net *net = dev->nd_net.net;

		if (net && (__u64)net->ptype_all.next != (__u64)&net->ptype_all)
			return 1;
	}
	if (cfg_ptype_all) {
		__u64 next = 0;

		bpf_probe_read_kernel(&next, sizeof(next), (void *)cfg_ptype_all);
		if (next && next != cfg_ptype_all)
			return 1;
	}
	return 0;
}

/* A tap (tcpdump, AF_PACKET) gets a clone whose zero-copy frags
 * skb_orphan_frags_rx copies in dev_queue_xmit_nit. */
SEC("tp_btf/net_dev_start_xmit")
int PROBE_PROG_EST(FEST_ZCB_XMIT, zcb_net_dev_start_xmit, const struct sk_buff *skb, const struct net_device *dev)
{
	struct zcb_flow f = {};
	struct sock *sk;

	if (!tap_active(dev))
		return 0;
	if (!(shinfo_flags(skb) & ZCB_SKBFL_ZEROCOPY_ENABLE) || !skb->data_len)
		return 0;
	sk = skb->sk;
	if (!sk || flow_of_sk(sk, &f))
		return 0;
	add_deferred(&f, ZCB_DEFERRED_TAP, skb->data_len);
	return 0;
}

/* A retransmitted zero-copy skb is copied again wherever its first
 * transmission was (a fresh clone reaches the same local socket or tap).
 * On loopback spurious retransmits are common: segments queued to two
 * CPUs' backlogs arrive reordered. 6.13+ passes err (the tracepoint also
 * fires for a retransmit that was refused, e.g. while the previous clone
 * is still in a host queue); older kernels have (sk, skb) only. */
static __always_inline int on_retransmit(const struct sock *sk, const struct sk_buff *skb)
{
	struct zcb_flow f = {};
	struct zcb_owner *o;

	if (!(shinfo_flags(skb) & ZCB_SKBFL_ZEROCOPY_ENABLE) || !skb->data_len || flow_of_sk(sk, &f))
		return 0;
	o = bpf_map_lookup_elem(&zcb_owners, &f);
	if (o)
		add_class(o->gen, o->path, ZCB_RETRANS_ZC, skb->data_len, 1);
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int PROBE_PROG(zcb_retransmit_err, const struct sock *sk, const struct sk_buff *skb, int err)
{
	return err ? 0 : on_retransmit(sk, skb);
}

SEC("tp_btf/tcp_retransmit_skb")
int PROBE_PROG(zcb_retransmit, const struct sock *sk, const struct sk_buff *skb)
{
	return on_retransmit(sk, skb);
}

/* ---- completions ---- */

/* Fires on every MSG_ZEROCOPY completion, after the notification was queued
 * or merged into the queue's tail (whose range then grew, and which keeps
 * the first notification's ee_code). Count sends past the highest id seen. */
SEC("tp_btf/inet_sk_error_report")
int PROBE_PROG(zcb_error_report, const struct sock *sk)
{
	struct sock_extended_err ee = {};
	struct zcb_flow f = {};
	struct zcb_owner *o;
	struct sk_buff *tail;
	__u32 n;

	if (!sk->sk_error_queue.qlen || flow_of_sk(sk, &f))
		return 0;
	o = bpf_map_lookup_elem(&zcb_owners, &f);
	if (!o)
		return 0;
	tail = sk->sk_error_queue.prev;
	if (bpf_probe_read_kernel(&ee, sizeof(ee), &((struct sock_exterr_skb *)tail->cb)->ee))
		return 0;
	if (ee.ee_origin != ZCB_SO_EE_ORIGIN_ZEROCOPY)
		return 0;
	if (o->has_hi) {
		n = ee.ee_data - o->last_hi;
		if ((__s32)n <= 0)
			return 0;
	} else {
		n = ee.ee_data - ee.ee_info + 1;
	}
	o->last_hi = ee.ee_data;
	o->has_hi = 1;
	add_class(o->gen, o->path, ZCB_ERRQ_DONE, 0, n);
	if (ee.ee_code & ZCB_SO_EE_CODE_ZEROCOPY_COPIED)
		add_class(o->gen, o->path, ZCB_ERRQ_COPIED, 0, n);
	return 0;
}

/* The classic format (same fields on 6.1-6.18): the tp_btf prototype
 * changed in 6.18 (ctx, req, cqe). */
struct zcb_uring_complete_args {
	__u64 common;
	__u64 ctx;
	__u64 req;
	__u64 user_data;
	__s32 res;
	__u32 cflags;
	__u64 extra1;
	__u64 extra2;
};

/* Notification CQEs are posted from task_work in the submitting task. */
SEC("tracepoint/io_uring/io_uring_complete")
int PROBE_TP(zcb_uring_complete, struct zcb_uring_complete_args)
{
	struct zc_thread *t;

	if (!(ctx->cflags & ZCB_IORING_CQE_F_NOTIF))
		return 0;
	t = current_thread();
	if (!t)
		return 0;
	add_class(t->gen, PATH_TX_IO_URING, ZCB_URING_NOTIF, 0, 1);
	if ((__u32)ctx->res & ZCB_IORING_NOTIF_USAGE_ZC_COPIED)
		add_class(t->gen, PATH_TX_IO_URING, ZCB_URING_COPIED, 0, 1);
	return 0;
}
