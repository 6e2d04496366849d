/* Shared between zcbytes.bpf.c, accounting.bpf.c (zcb_stats.h) and the Go
 * loader (profiler/byteclass); the Go constants (byteclass.go) are checked
 * against this file by TestClassesMirrored. */
#ifndef ZCPROF_ZCBYTES_H
#define ZCPROF_ZCBYTES_H

/* What the kernel did with bytes, per (thread generation, path). Send
 * classes partition the bytes sock_sendmsg returned on TCP sockets; the
 * others are counted where the kernel acts (completion counters count
 * sends, in events, not bytes). */
enum zcb_class {
	ZCB_TX_COPY = 0,            /* copied into the socket (write, send, io_uring SEND) */
	ZCB_TX_COPY_ZC_IGNORED = 1, /* MSG_ZEROCOPY without SO_ZEROCOPY: silently copied */
	ZCB_TX_COPY_NO_SG = 2,      /* zero-copy or splice asked for, route without SG: copied */
	ZCB_TX_SPLICE = 3,          /* page references (sendfile, splice, vmsplice) */
	ZCB_TX_SPLICE_SRC_COPY = 4, /* spliced, but the source was read into new pages (copy_splice_read) */
	ZCB_TX_PINNED = 5,          /* user pages pinned (MSG_ZEROCOPY, io_uring SEND_ZC) */
	ZCB_TX_UNCLASSIFIED = 6,    /* no decision seen (send began before attach, fastopen, ...) */
	ZCB_DEFERRED_LOOPBACK = 7,  /* zero-copy skb payload that reached local delivery on lo */
	ZCB_DEFERRED_VETH = 8,      /* ... on a veth */
	ZCB_DEFERRED_OTHER = 9,     /* ... on another device */
	ZCB_DEFERRED_TAP = 10,      /* zero-copy skb payload transmitted while a packet tap listened */
	ZCB_ERRQ_DONE = 11,         /* MSG_ZEROCOPY sends completed (error queue), events */
	ZCB_ERRQ_COPIED = 12,       /* of those, reported COPIED, events */
	ZCB_URING_NOTIF = 13,       /* io_uring zero-copy notification CQEs, events */
	ZCB_URING_COPIED = 14,      /* of those, with IORING_NOTIF_USAGE_ZC_COPIED, events */
	ZCB_RX_COPY = 15,           /* copied to user: a TCP receive's bytes without MSG_TRUNC, TCP_ZEROCOPY_RECEIVE's copybuf (the accounting's sys_exit) */
	ZCB_RX_MAPPED = 16,         /* mapped by TCP_ZEROCOPY_RECEIVE */
	ZCB_RETRANS_ZC = 17,        /* zero-copy skb payload retransmitted (copied again where the first was) */
	ZCB_TX_COPY_ULP = 18,       /* "spliced" by a TCP ULP (kTLS) into records it built: copied */
	ZCB_RX_DISCARD = 19,        /* returned by a TCP receive with MSG_TRUNC, never copied (the accounting's sys_exit, byte classes or not) */
	NR_ZCB = 20,
};

#define ZCB_NR_DEFERRED 4 /* ZCB_DEFERRED_LOOPBACK .. ZCB_DEFERRED_TAP */

struct zcb_key {
	__u32 gen; /* accounting thread generation */
	__u8 path; /* enum zc_path at the time */
	__u8 class;
	__u16 pad;
};

struct zcb_val {
	__u64 bytes;
	__u64 events; /* calls, skbs or sends, by class */
};

/* A TCP flow as its sender sees it (local = packet source); v4 addresses in
 * [0]. Deferred copies happen on skbs that lost their socket (loopback and
 * veth orphan them), so their owner is found by the flow. */
struct zcb_flow {
	__u8 family; /* 4 or 6 */
	__u8 pad;
	__u16 sport; /* host order */
	__u16 dport;
	__u16 pad2;
	__u32 saddr[4];
	__u32 daddr[4];
};

struct zcb_owner {
	__u32 gen;
	__u8 path;
	__u8 has_hi;
	__u16 pad;
	__u32 last_hi; /* highest MSG_ZEROCOPY id seen completed */
	__u32 pad2;
};

/* Deferred copies seen before the flow's owner was known: the first
 * zero-copy send's skbs reach local delivery inside that send, before
 * sock_send_length names the owner. Handed over when it does. */
struct zcb_pending {
	__u64 bytes[ZCB_NR_DEFERRED];
	__u64 events[ZCB_NR_DEFERRED];
};

#endif
