package byteclass

import "github.com/zcprof/zcprof/profiler/taxonomy"

// Class is what the kernel did with bytes; mirrors enum zcb_class in
// bpf/zcbytes.h.
type Class uint8

const (
	ClassTxCopy Class = iota
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
	// Returned by a TCP receive with MSG_TRUNC, never copied: counted by
	// the accounting whether or not the byte-class programs are loaded
	// (a request's own fact, like a path).
	ClassRxDiscard
	// Past enum zcb_class, never counted by BPF: tx.write's bytes taken
	// as copies where no send was traced (Options.TxWritesCopy).
	ClassTxCopyWrite
	numClasses
)

var classNames = [...]string{
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
	ClassRxDiscard:          "rx.discard",
	ClassTxCopyWrite:        "tx.copy.write",
}

// String returns the class's name.
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "invalid"
}

// Key addresses one byte-class counter.
type Key struct {
	Gen   uint32
	Path  taxonomy.Path
	Class Class
}

// PathClass is a byte-class counter key within one thread.
type PathClass struct {
	Path  taxonomy.Path
	Class Class
}

// Count is bytes and events (calls, skbs or completed sends, by class).
type Count struct {
	Bytes, Events uint64
}

// Add sums two counts.
func (c Count) Add(o Count) Count {
	return Count{c.Bytes + o.Bytes, c.Events + o.Events}
}

// Sub is modular, like the accounting's counters: the difference of two
// readings is right across a wrap.
func (c Count) Sub(o Count) Count {
	return Count{c.Bytes - o.Bytes, c.Events - o.Events}
}
