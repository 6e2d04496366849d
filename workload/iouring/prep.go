package iouring

import "unsafe"

// PrepNop fills sqe as IORING_OP_NOP.
func PrepNop(sqe *SQE, userData uint64) {
	sqe.Opcode = OpNop
	sqe.UserData = userData
}

// PrepSend fills sqe as IORING_OP_SEND of buf on fd. buf must stay alive and
// unmoved until the completion (callers pass long-lived, non-Go-heap-moving
// slices; Go's heap does not move objects).
func PrepSend(sqe *SQE, fd int, buf []byte, msgFlags uint32, userData uint64) {
	sqe.Opcode = OpSend
	sqe.Fd = int32(fd)
	sqe.Addr = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	sqe.Len = uint32(len(buf))
	sqe.OpFlags = msgFlags
	sqe.UserData = userData
}

// PrepRead fills sqe as IORING_OP_READ of len(buf) bytes of fd at offset
// off (5.6+); buf as for PrepSend.
func PrepRead(sqe *SQE, fd int, buf []byte, off uint64, userData uint64) {
	sqe.Opcode = OpRead
	sqe.Fd = int32(fd)
	sqe.Off = off
	sqe.Addr = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
	sqe.Len = uint32(len(buf))
	sqe.UserData = userData
}

// PrepSendZC fills sqe as IORING_OP_SEND_ZC. With reportUsage the
// notification CQE's res carries NotifUsageZCCopied when the kernel copied.
func PrepSendZC(sqe *SQE, fd int, buf []byte, msgFlags uint32, reportUsage bool, userData uint64) {
	PrepSend(sqe, fd, buf, msgFlags, userData)
	sqe.Opcode = OpSendZC
	if reportUsage {
		sqe.Ioprio = SendZCReportUsage
	}
}
