// Package iouring is a minimal io_uring over golang.org/x/sys/unix: enough for
// one submitter thread issuing IORING_OP_SEND / IORING_OP_SEND_ZC (and
// IORING_OP_READ, for tests) and reaping completions. Layouts follow
// include/uapi/linux/io_uring.h (6.18).
package iouring

// Opcodes (enum io_uring_op).
const (
	OpNop    = 0
	OpRead   = 22
	OpSend   = 26
	OpSendZC = 47
)

// Setup / enter / mmap constants.
const (
	featSingleMmap = 1 << 0  // IORING_FEAT_SINGLE_MMAP
	setupCQSize    = 1 << 3  // IORING_SETUP_CQSIZE
	setupSingleIss = 1 << 12 // IORING_SETUP_SINGLE_ISSUER (6.0+)
	setupDeferTask = 1 << 13 // IORING_SETUP_DEFER_TASKRUN (6.1+)

	enterGetEvents = 1 << 0 // IORING_ENTER_GETEVENTS
	enterExtArg    = 1 << 3 // IORING_ENTER_EXT_ARG (5.11+)

	offSQRing = 0          // IORING_OFF_SQ_RING
	offCQRing = 0x8000000  // IORING_OFF_CQ_RING
	offSQEs   = 0x10000000 // IORING_OFF_SQES

	registerProbe = 8 // IORING_REGISTER_PROBE
)

// CQE flags and SEND_ZC bits.
const (
	CQEFMore           = 1 << 1  // IORING_CQE_F_MORE: a notification CQE will follow
	CQEFNotif          = 1 << 3  // IORING_CQE_F_NOTIF: this CQE is the zero-copy notification
	SendZCReportUsage  = 1 << 3  // IORING_SEND_ZC_REPORT_USAGE, goes in sqe.ioprio
	NotifUsageZCCopied = 1 << 31 // IORING_NOTIF_USAGE_ZC_COPIED, in notif cqe.res
)

// sqringOffsets is struct io_sqring_offsets (40 bytes).
type sqringOffsets struct {
	Head, Tail, RingMask, RingEntries, Flags, Dropped, Array, Resv1 uint32
	UserAddr                                                        uint64
}

// cqringOffsets is struct io_cqring_offsets (40 bytes).
type cqringOffsets struct {
	Head, Tail, RingMask, RingEntries, Overflow, CQEs, Flags, Resv1 uint32
	UserAddr                                                        uint64
}

// params is struct io_uring_params (120 bytes).
type params struct {
	SQEntries, CQEntries, Flags, SQThreadCPU, SQThreadIdle, Features, WQFd uint32
	Resv                                                                   [3]uint32
	SQOff                                                                  sqringOffsets
	CQOff                                                                  cqringOffsets
}

// SQE is struct io_uring_sqe (64 bytes). Unions are flattened to the member
// this package uses: Off (off/addr2), Addr, OpFlags (msg_flags etc.).
type SQE struct {
	Opcode      uint8
	Flags       uint8
	Ioprio      uint16
	Fd          int32
	Off         uint64
	Addr        uint64
	Len         uint32
	OpFlags     uint32
	UserData    uint64
	BufIndex    uint16
	Personality uint16
	SpliceFdIn  int32
	Addr3       uint64
	Pad2        uint64
}

// geteventsArg is struct io_uring_getevents_arg (24 bytes); MinWaitUsec was
// pad before 6.12 and must stay 0.
type geteventsArg struct {
	Sigmask     uint64
	SigmaskSz   uint32
	MinWaitUsec uint32
	Ts          uint64 // *struct __kernel_timespec
}

// CQE is struct io_uring_cqe (16 bytes, without CQE32).
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

// probe is struct io_uring_probe followed by room for 256 io_uring_probe_op.
type probe struct {
	LastOp uint8
	OpsLen uint8
	Resv   uint16
	Resv2  [3]uint32
	Ops    [256]probeOp
}

type probeOp struct {
	Op    uint8
	Resv  uint8
	Flags uint16 // IO_URING_OP_SUPPORTED = 1
	Resv2 uint32
}
