package byteclass

import (
	"fmt"
	"strings"

	"github.com/zcprof/zcprof/profiler/report"
)

// byteTotals is one entry's byte classes, indexed by Class.
type byteTotals [numClasses]Count

func (t byteTotals) bytes(cs ...Class) uint64 {
	var n uint64
	for _, c := range cs {
		n += t[c].Bytes
	}
	return n
}

func (t byteTotals) events(cs ...Class) uint64 {
	var n uint64
	for _, c := range cs {
		n += t[c].Events
	}
	return n
}

var (
	txCopyClasses     = []Class{ClassTxCopy, ClassTxCopyWrite, ClassTxCopyZCIgnored, ClassTxCopyNoSG, ClassTxSpliceSourceCopy, ClassTxCopyULP}
	txClasses         = append([]Class{ClassTxSplice, ClassTxPinned, ClassTxUnclassified}, txCopyClasses...)
	deferredClasses   = []Class{ClassDeferredLoopback, ClassDeferredVeth, ClassDeferredTap, ClassDeferredOther}
	deferredWhere     = map[Class]string{ClassDeferredLoopback: "loopback", ClassDeferredVeth: "veth", ClassDeferredTap: "packet tap", ClassDeferredOther: "another device"}
	deferredJSONNames = map[Class]string{ClassDeferredLoopback: "loopback", ClassDeferredVeth: "veth", ClassDeferredTap: "packet_tap", ClassDeferredOther: "other"}
)

// rxPathBytes are what receive syscalls returned, by path (the
// accounting's path counters), and the part of rx.read that TCP copied to
// user memory: the rest of rx.read was discarded (MSG_TRUNC).
type rxPathBytes struct {
	read, readCopied, splice uint64
}

// zerocopy turns byte classes into the report object with a verdict in
// plain words (report.Judge) and the numbers behind it.
func (t byteTotals) zerocopy(rx rxPathBytes, names report.VerdictNames) *report.Zerocopy {
	zc := &report.Zerocopy{
		Source:                 report.ZerocopySourceKernel,
		TxBytes:                t.bytes(txClasses...),
		TxCopiedBytes:          t.bytes(txCopyClasses...),
		TxSplicedBytes:         t.bytes(ClassTxSplice),
		TxPinnedBytes:          t.bytes(ClassTxPinned),
		TxDeferredCopyBytes:    t.bytes(deferredClasses...),
		TxDeferredRecopyBytes:  min(t.bytes(ClassRetransZC), t.bytes(deferredClasses...)),
		RxCopiedBytes:          t.bytes(ClassRxCopy),
		RxMappedBytes:          t.bytes(ClassRxMapped),
		RxSplicedBytes:         rx.splice,
		RxDiscardedBytes:       rx.read - min(rx.read, rx.readCopied),
		TxCopiedZCIgnoredBytes: t.bytes(ClassTxCopyZCIgnored),
		TxCopiedNoSGBytes:      t.bytes(ClassTxCopyNoSG),
		TxCopiedULPBytes:       t.bytes(ClassTxCopyULP),
		TxSourceCopiedBytes:    t.bytes(ClassTxSpliceSourceCopy),
		TxUnclassifiedBytes:    t.bytes(ClassTxUnclassified),
		ZCCompletions:          t.events(ClassErrqDone, ClassUringNotif),
		ZCCompletionsCopied:    t.events(ClassErrqCopied, ClassUringCopied),
	}
	// Where copies happen in one place only and every pinned byte was
	// copied, a pinned byte is copied once per transmission that is
	// delivered: what was copied beyond the pinned bytes went out more than
	// once, and nothing else is a re-copy. (The
	// retransmit tracepoint overcounts here: on 6.18 it also fires for
	// retransmissions the stack refused, and a spurious fast retransmit
	// after loopback reordered segments may not be flagged at all.)
	places := 0
	for _, c := range deferredClasses {
		if t[c].Bytes > 0 {
			places++
		}
	}
	if places == 1 && zc.TxDeferredCopyBytes >= zc.TxPinnedBytes {
		zc.TxDeferredRecopyBytes = zc.TxDeferredCopyBytes - zc.TxPinnedBytes
	}
	zc.TxDeferredCopyBytes -= zc.TxDeferredRecopyBytes
	for _, c := range deferredClasses {
		if n := t[c].Bytes; n > 0 {
			if zc.TxDeferredVia == nil {
				zc.TxDeferredVia = map[string]uint64{}
			}
			zc.TxDeferredVia[deferredJSONNames[c]] = n
		}
	}
	report.Judge(zc, names)
	var reasons []string
	if zc.TxBytes > 0 {
		reasons = append(reasons, t.txReason(zc))
	}
	if zc.RxBytes() > 0 {
		reasons = append(reasons, rxReason(zc))
	}
	zc.Reason = strings.Join(reasons, " ")
	if zc.Reason == "" {
		zc.Reason = "no bytes were sent or received on TCP sockets"
	}
	return zc
}

// deferredVia names where the deferred copies happened, largest first.
func (t byteTotals) deferredVia() string {
	var names []string
	for _, c := range deferredClasses {
		if t[c].Bytes > 0 {
			names = append(names, deferredWhere[c])
		}
	}
	if len(names) == 0 {
		return "no device"
	}
	return strings.Join(names, ", ")
}

func (t byteTotals) txReason(zc *report.Zerocopy) string {
	calls := t.events(txClasses...)
	parts := []string{}
	if n := t[ClassTxCopy].Bytes; n > 0 {
		parts = append(parts, size(n)+" copied (plain send)")
	}
	if n := t[ClassTxCopyWrite].Bytes; n > 0 {
		// Options.TxWritesCopy: the sender was known to write plainly.
		parts = append(parts, size(n)+" copied (tx.write bytes: the sender writes, and a write copies every byte it sends)")
	}
	if n := zc.TxCopiedZCIgnoredBytes; n > 0 {
		parts = append(parts, size(n)+" copied although MSG_ZEROCOPY was passed (socket without SO_ZEROCOPY)")
	}
	if n := zc.TxCopiedNoSGBytes; n > 0 {
		parts = append(parts, size(n)+" copied for lack of scatter-gather on the route")
	}
	if n := t[ClassTxCopyULP].Bytes; n > 0 {
		parts = append(parts, size(n)+" copied into records by a TCP upper-layer protocol (kTLS) before it spliced them")
	}
	if n := zc.TxSourceCopiedBytes; n > 0 {
		parts = append(parts, size(n)+" spliced from pages copy_splice_read had just filled (the source cannot splice)")
	}
	if n := zc.TxSplicedBytes; n > 0 {
		parts = append(parts, size(n)+" spliced (page references)")
	}
	if n := zc.TxPinnedBytes; n > 0 {
		parts = append(parts, size(n)+" pinned (MSG_ZEROCOPY / SEND_ZC)")
	}
	if n := zc.TxUnclassifiedBytes; n > 0 {
		parts = append(parts, size(n)+" unclassified (no decision seen: a send begun before zcprof attached, or an io_uring send the syscall inference could not match)")
	}
	r := fmt.Sprintf("Sent %s in %d sock_sendmsg calls: %s.", size(zc.TxBytes), calls, strings.Join(parts, ", "))
	if d := zc.TxDeferredCopyBytes; d > 0 {
		r += fmt.Sprintf(" skb_copy_ubufs copied %s of zero-copy skb payload again later (%s of pinned) via %s",
			size(d), percent(d, zc.TxPinnedBytes), t.deferredVia())
		if n := zc.TxDeferredRecopyBytes; n > 0 {
			r += fmt.Sprintf(", and %s more for retransmissions", size(n))
		}
		r += "."
	} else if zc.TxPinnedBytes > 0 {
		r += " No zero-copy skb reached local delivery or a packet tap."
	}
	if n := t[ClassErrqDone].Events; n > 0 {
		r += fmt.Sprintf(" Error queue: %d of %d completed MSG_ZEROCOPY sends reported COPIED (the kernel merges ranges and keeps the first flag).",
			t[ClassErrqCopied].Events, n)
	}
	if n := t[ClassUringNotif].Events; n > 0 {
		r += fmt.Sprintf(" io_uring: %d of %d zero-copy notifications had IORING_NOTIF_USAGE_ZC_COPIED.", t[ClassUringCopied].Events, n)
	}
	return r
}

// rxReason says where the received bytes' classes come from.
func rxReason(zc *report.Zerocopy) string {
	const copied = "(what receive calls without MSG_TRUNC returned, all of which TCP copies, and TCP_ZEROCOPY_RECEIVE's copy buffer)"
	r := fmt.Sprintf("Received %s: %s copied to user memory %s, %s mapped by TCP_ZEROCOPY_RECEIVE, %s spliced into pipes (rx.splice bytes)",
		size(zc.RxBytes()), size(zc.RxCopiedBytes), copied, size(zc.RxMappedBytes), size(zc.RxSplicedBytes))
	if n := zc.RxDiscardedBytes; n > 0 {
		r += fmt.Sprintf(", %s returned by receive calls with MSG_TRUNC but never copied (TCP discards them)", size(n))
	}
	return r + "."
}

// percent and size are report's formats (one place for every renderer).
func percent(a, b uint64) string { return report.ShortPercent(a, b) }

func size(n uint64) string { return report.Size(n) }
