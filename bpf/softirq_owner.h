/* Shared between softirq_owner.bpf.c and its Go loader
 * (profiler/softirqowner); keep the Go constants in step. */
#ifndef ZCPROF_SOFTIRQ_OWNER_H
#define ZCPROF_SOFTIRQ_OWNER_H

/* Owner tags: what a segment's destination socket was. */
enum zc_owner_tag {
	ZC_OWNER_UNKNOWN = 0, /* no tcp_probe in the segment (backlogged, not TCP) */
	ZC_OWNER_OTHER = 1,   /* a socket nobody registered */
	ZC_OWNER_FIRST = 2,   /* registered tags start here */
};

/* Where a segment was processed. */
enum zc_owner_ctx {
	ZC_OWNER_CTX_NET_RX = 0, /* NET_RX softirq */
	ZC_OWNER_CTX_TASK = 1,   /* task context: socket backlog in release_sock */
	ZC_OWNER_CTX_OTHER = 2,  /* another interrupt context */
};

struct zc_owner_key {
	__u32 gen;   /* accounting generation of the thread that ran it; 0 = none */
	__u32 owner; /* tag */
	__u8 ctx;
	__u8 pad[7];
};

struct zc_owner_val {
	__u64 segs;  /* tcp_probe events (registered sockets only) */
	__u64 bytes; /* their new TCP payload (not seen before: no duplicates), less dropped segments' */
	__u64 ns;    /* NET_RX time of the segments (any socket) */
};

#endif
