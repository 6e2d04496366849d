package profiler

// ByteClass is what the kernel did with bytes; mirrors enum zcb_class in
// bpf/zcbytes.h.
type ByteClass uint8

const (
	ClassTxCopy ByteClass = iota
	ClassTxCopyZCIgnored
	ClassTxCopyNoSG
	ClassTxSplice
	ClassTxSpliceSourceCopy
	ClassTxPinned
	ClassTxUnclassified
	ClassDeferredLoopback
	ClassDeferredVeth
	ClassDeferredOther
	ClassDeferredTap
	ClassErrqDone   // events: MSG_ZEROCOPY sends completed
	ClassErrqCopied // events: of those, reported COPIED
	ClassUringNotif // events: io_uring zero-copy notifications
	ClassUringCopied
	ClassRxCopy
	ClassRxMapped
	ClassRetransZC // zero-copy payload retransmitted: copied again where the first copy was
	ClassTxCopyULP // spliced by a TCP ULP (kTLS) from records it copied the bytes into
	numByteClasses
)

var byteClassNames = [...]string{
	ClassTxCopy:             "tx.copy",
	ClassTxCopyZCIgnored:    "tx.copy.zc_ignored",
	ClassTxCopyNoSG:         "tx.copy.no_sg",
	ClassTxSplice:           "tx.splice",
	ClassTxSpliceSourceCopy: "tx.splice.source_copied",
	ClassTxPinned:           "tx.pinned",
	ClassTxUnclassified:     "tx.unclassified",
	ClassDeferredLoopback:   "deferred.loopback",
	ClassDeferredVeth:       "deferred.veth",
	ClassDeferredOther:      "deferred.other",
	ClassDeferredTap:        "deferred.packet_tap",
	ClassErrqDone:           "errqueue.completed",
	ClassErrqCopied:         "errqueue.copied",
	ClassUringNotif:         "io_uring.notifications",
	ClassUringCopied:        "io_uring.copied",
	ClassRxCopy:             "rx.copy",
	ClassRxMapped:           "rx.mapped",
	ClassRetransZC:          "retransmit.zc",
	ClassTxCopyULP:          "tx.copy.ulp",
}

func (c ByteClass) String() string {
	if int(c) < len(byteClassNames) {
		return byteClassNames[c]
	}
	return "invalid"
}

// ByteKey addresses one byte-class counter.
type ByteKey struct {
	Gen   uint32
	Path  Path
	Class ByteClass
}

// PathClass is a byte-class counter key within one thread.
type PathClass struct {
	Path  Path
	Class ByteClass
}

// ByteCount is bytes and events (calls, skbs or completed sends, by class).
type ByteCount struct {
	Bytes, Events uint64
}

func (c ByteCount) add(o ByteCount) ByteCount {
	return ByteCount{c.Bytes + o.Bytes, c.Events + o.Events}
}
func (c ByteCount) sub(o ByteCount) ByteCount {
	return ByteCount{c.Bytes - o.Bytes, c.Events - o.Events}
}

// Byte-class backends: how send decisions are observed.
const (
	// ByteClassesDecision replicates tcp_sendmsg_locked's decision from
	// the tcp:tcp_sendmsg_locked tracepoint (6.16+).
	ByteClassesDecision = "tcp_sendmsg_locked"
	// ByteClassesSyscall infers it from the syscall path, the socket's
	// SOCK_ZEROCOPY flag and route caps, and io_uring's submitted opcode.
	ByteClassesSyscall = "syscall"
	// ByteClassesSyscallReturn is the same inference with the bytes taken
	// from send syscalls' return values, for kernels without the
	// sock:sock_send_length tracepoint (before 6.3); io_uring sends are
	// not classified.
	ByteClassesSyscallReturn = "syscall_return"
	ByteClassesOff           = "off"
)

// deltaByteClasses adds the byte-class differences of two snapshots to the
// interval's threads (creating entries for threads with no CPU change).
// Every thread of an interval whose snapshots carry byte classes gets a
// non-nil map: nil means the feature was not loaded.
func deltaByteClasses(prev, cur *Snapshot, byGen map[uint32]*ThreadDelta, iv *Interval) {
	if cur.ByteClasses == nil {
		return
	}
	iv.ByteClassDrops = cur.ByteClassDrops - prev.ByteClassDrops
	for k, c := range cur.ByteClasses {
		d := c.sub(prev.ByteClasses[k])
		if d == (ByteCount{}) || k.Gen == 0 {
			continue
		}
		td := byGen[k.Gen]
		if td == nil {
			td = &ThreadDelta{Info: cur.Threads[k.Gen], Counters: map[PathCtx]Counter{}}
			td.Info.Gen = k.Gen
			byGen[k.Gen] = td
		}
		if td.ByteClasses == nil {
			td.ByteClasses = map[PathClass]ByteCount{}
		}
		pc := PathClass{k.Path, k.Class}
		td.ByteClasses[pc] = td.ByteClasses[pc].add(d)
	}
	for _, td := range byGen {
		if td.ByteClasses == nil {
			td.ByteClasses = map[PathClass]ByteCount{}
		}
	}
}
