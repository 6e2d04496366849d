package taxonomy

// Path is what a thread's base context was doing; the values mirror enum
// zc_path in bpf/accounting.h.
type Path uint8

const (
	PathUser Path = iota
	PathTxWrite
	PathTxMsgZerocopy
	PathTxSendfile
	PathTxSplice
	PathTxIOUring
	PathRxRead
	PathRxZerocopy
	PathRxSplice
	PathWait
	PathOther
	PathUnknown // first seen mid-context; moved to the real path at the next boundary
	PathSysIdle
	PathSysKsoftirqd
	PathSysOtherTask
	// io_uring_enter calls that do not submit a socket send first
	// (receives, file I/O, waits) and io-wq/SQPOLL threads.
	PathIOUring
	numPaths
)

var pathNames = [...]string{
	PathUser:          "user",
	PathTxWrite:       "tx.write",
	PathTxMsgZerocopy: "tx.msg_zerocopy",
	PathTxSendfile:    "tx.sendfile",
	PathTxSplice:      "tx.splice",
	PathTxIOUring:     "tx.io_uring",
	PathRxRead:        "rx.read",
	PathRxZerocopy:    "rx.zerocopy",
	PathRxSplice:      "rx.splice",
	PathWait:          "wait",
	PathOther:         "other",
	PathUnknown:       "unknown",
	PathSysIdle:       "system.idle",
	PathSysKsoftirqd:  "system.ksoftirqd",
	PathSysOtherTask:  "system.other_task",
	PathIOUring:       "io_uring",
}

// String returns the name used in tables and in the zcprof/v1 JSON contract.
func (p Path) String() string {
	if int(p) < len(pathNames) {
		return pathNames[p]
	}
	return "invalid"
}

// IsSyscall reports whether p is time inside syscalls: the socket paths,
// wait, other and io_uring (not user time, a system row or unknown).
func (p Path) IsSyscall() bool {
	return (p >= PathTxWrite && p <= PathOther) || p == PathIOUring
}

// PathByName is the path a name of the output contract stands for.
func PathByName(name string) (Path, bool) {
	for p := Path(0); p < numPaths; p++ {
		if p.String() == name {
			return p, true
		}
	}
	return 0, false
}

// SyscallPaths lists the kernel paths of the taxonomy in report order.
var SyscallPaths = []Path{
	PathTxWrite, PathTxMsgZerocopy, PathTxSendfile, PathTxSplice, PathTxIOUring,
	PathRxRead, PathRxZerocopy, PathRxSplice, PathIOUring, PathWait, PathOther,
}

// Ctx is the kind of execution; mirrors enum zc_ctx.
type Ctx uint8

const (
	CtxTask Ctx = iota
	CtxSoftirqNetRx
	CtxSoftirqNetTx
	CtxSoftirqOther
	CtxHardirq
	numCtx
	// Not on-CPU time: per run, what zcprof measured minus what the
	// kernel added to sum_exec_runtime. The kernel cuts runs where it last
	// read the rq clock; after a wakeup preemption that is the wakeup, so
	// the rest of the waker's run is billed to the woken task. Kept apart
	// for the schedstat self-check.
	CtxKernelDiff Ctx = 5
	// Not on-CPU time: windows around context switches sched_switch did
	// not report, within which the split between two threads is unknown.
	CtxSwitchUncertain Ctx = 6
	// zcprof's own handlers, from each one's first clock read to its
	// last: on-CPU time of the thread (schedstat bills it) that is cut
	// out of its user, path and interrupt time. One key per thread
	// (path ProbePath); calls are the handler runs timed.
	CtxProbe Ctx = 7
)

// ProbePath is the path CtxProbe time is kept under (PROBE_PATH).
const ProbePath = PathOther

var ctxNames = [...]string{
	CtxTask:            "task",
	CtxSoftirqNetRx:    "softirq.net_rx",
	CtxSoftirqNetTx:    "softirq.net_tx",
	CtxSoftirqOther:    "softirq.other",
	CtxHardirq:         "hardirq",
	CtxKernelDiff:      "kernel_diff",
	CtxSwitchUncertain: "switch_uncertain",
	CtxProbe:           "probe",
}

func (c Ctx) String() string {
	if int(c) < len(ctxNames) {
		return ctxNames[c]
	}
	return "invalid"
}

// OnCPU reports whether time in this context is the workload's own run
// time. CtxProbe is run time of the thread too, but zcprof's: MeasuredNS
// adds it, attribution and the report's paths leave it out.
func (c Ctx) OnCPU() bool { return c < numCtx }

// IsSoftirq reports whether c is one of the softirq vectors.
func (c Ctx) IsSoftirq() bool {
	return c == CtxSoftirqNetRx || c == CtxSoftirqNetTx || c == CtxSoftirqOther
}
