package profiler

import (
	"fmt"
	"strings"

	"github.com/zcprof/zcprof/profiler/report"
)

// byteTotals is one entry's byte classes, indexed by ByteClass.
type byteTotals [numByteClasses]ByteCount

func (t byteTotals) bytes(cs ...ByteClass) uint64 {
	var n uint64
	for _, c := range cs {
		n += t[c].Bytes
	}
	return n
}

func (t byteTotals) events(cs ...ByteClass) uint64 {
	var n uint64
	for _, c := range cs {
		n += t[c].Events
	}
	return n
}

var (
	txCopyClasses     = []ByteClass{ClassTxCopy, ClassTxCopyZCIgnored, ClassTxCopyNoSG, ClassTxSpliceSourceCopy, ClassTxCopyULP}
	txClasses         = append([]ByteClass{ClassTxSplice, ClassTxPinned, ClassTxUnclassified}, txCopyClasses...)
	deferredClasses   = []ByteClass{ClassDeferredLoopback, ClassDeferredVeth, ClassDeferredTap, ClassDeferredOther}
	deferredWhere     = map[ByteClass]string{ClassDeferredLoopback: "loopback", ClassDeferredVeth: "veth", ClassDeferredTap: "packet tap", ClassDeferredOther: "another device"}
	deferredJSONNames = map[ByteClass]string{ClassDeferredLoopback: "loopback", ClassDeferredVeth: "veth", ClassDeferredTap: "packet_tap", ClassDeferredOther: "other"}
)

// Thresholds of the verdicts: a deferred copy of at least allCopied of the
// pinned bytes is "copied"; below noneCopied it is noise (a retransmitted
// or tapped skb) and zero-copy counts as taken.
const (
	allCopied  = 0.99
	noneCopied = 0.01
)

// zerocopy turns byte classes into the report object with a verdict in
// plain words and the numbers behind it. splicer names what did the
// spliced sends ("sendfile", "splice" or "sendfile/splice").
func (t byteTotals) zerocopy(splicer string) *report.Zerocopy {
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
		TxCopiedZCIgnoredBytes: t.bytes(ClassTxCopyZCIgnored),
		TxCopiedNoSGBytes:      t.bytes(ClassTxCopyNoSG),
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
	var verdicts, reasons []string
	if v, r := t.txVerdict(zc, splicer); v != "" {
		verdicts, reasons = append(verdicts, v), append(reasons, r)
	}
	if v, r := t.rxVerdict(zc); v != "" {
		verdicts, reasons = append(verdicts, v), append(reasons, r)
	}
	if len(verdicts) == 0 {
		zc.Verdict = "no TCP transfers"
		zc.Reason = "no bytes were sent or received on TCP sockets"
		return zc
	}
	zc.Verdict = strings.Join(verdicts, "; ")
	zc.Reason = strings.Join(reasons, " ")
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

func (t byteTotals) txVerdict(zc *report.Zerocopy, splicer string) (string, string) {
	tx, copied := zc.TxBytes, zc.TxCopiedBytes
	if tx == 0 {
		return "", ""
	}
	pinned, spliced := zc.TxPinnedBytes, zc.TxSplicedBytes
	deferred := min(zc.TxDeferredCopyBytes, pinned)
	kept := spliced + pinned - deferred // bytes that never got copied
	var verdict string
	switch {
	case spliced+pinned == 0 && copied > 0:
		switch copied {
		case zc.TxCopiedZCIgnoredBytes:
			verdict = "MSG_ZEROCOPY ignored: SO_ZEROCOPY not set, every byte copied on send"
		case zc.TxSourceCopiedBytes:
			verdict = splicer + " from a source that cannot splice (O_DIRECT, DAX, procfs, /dev/zero ...): copied"
		case zc.TxCopiedNoSGBytes:
			verdict = "zero-copy requested but copied on send: the route has no scatter-gather (TCP-MD5/AO, IPsec)"
		case t[ClassTxCopyULP].Bytes:
			verdict = "copy: kTLS (a TCP upper-layer protocol) copies every byte into its own records"
		default:
			verdict = "copy: every byte copied on send"
			if why := t.copyCauses(zc, splicer); why != "" {
				verdict += " (" + why + ")"
			}
		}
	case copied == 0 && pinned > 0 && ratio(deferred, pinned) >= allCopied && spliced == 0:
		verdict = "zero-copy requested but copied on local delivery (" + t.deferredVia() + ")"
	case copied == 0 && ratio(zc.TxDeferredCopyBytes, tx) < noneCopied && ratio(zc.TxUnclassifiedBytes, tx) < noneCopied:
		verdict = "zero-copy taken"
	default:
		verdict = fmt.Sprintf("zero-copy partially taken: %s of bytes never copied", percent(kept, tx))
		var causes []string
		if deferred > 0 {
			causes = append(causes, fmt.Sprintf("%s of pinned bytes copied later on local delivery (%s)", percent(deferred, pinned), t.deferredVia()))
		}
		if n := zc.TxUnclassifiedBytes; n > 0 {
			causes = append(causes, fmt.Sprintf("%s unclassified", percent(n, tx)))
		}
		if copied > 0 {
			c := fmt.Sprintf("%s copied on send", percent(copied, tx))
			if why := t.copyCauses(zc, splicer); why != "" {
				c += " (" + why + ")"
			}
			causes = append(causes, c)
		}
		if len(causes) > 0 {
			verdict += ": " + strings.Join(causes, ", ")
		}
	}
	return verdict, t.txReason(zc)
}

// copyCauses explains copied bytes that zero-copy was asked for.
func (t byteTotals) copyCauses(zc *report.Zerocopy, splicer string) string {
	var out []string
	if n := zc.TxCopiedZCIgnoredBytes; n > 0 {
		out = append(out, fmt.Sprintf("MSG_ZEROCOPY ignored for %s: SO_ZEROCOPY not set", size(n)))
	}
	if n := zc.TxSourceCopiedBytes; n > 0 {
		out = append(out, fmt.Sprintf("%s of %s from a source that cannot splice", size(n), splicer))
	}
	if n := zc.TxCopiedNoSGBytes; n > 0 {
		out = append(out, fmt.Sprintf("%s with zero-copy asked on a route without scatter-gather", size(n)))
	}
	if n := t[ClassTxCopyULP].Bytes; n > 0 {
		out = append(out, fmt.Sprintf("%s copied into kTLS records", size(n)))
	}
	return strings.Join(out, "; ")
}

func (t byteTotals) txReason(zc *report.Zerocopy) string {
	calls := t.events(txClasses...)
	parts := []string{}
	if n := t[ClassTxCopy].Bytes; n > 0 {
		parts = append(parts, size(n)+" copied (plain send)")
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

func (t byteTotals) rxVerdict(zc *report.Zerocopy) (string, string) {
	copied, mapped := zc.RxCopiedBytes, zc.RxMappedBytes
	rx := copied + mapped
	if rx == 0 {
		return "", ""
	}
	reason := fmt.Sprintf("Received %s: %s copied to user memory (skb_copy_datagram_iovec), %s mapped by TCP_ZEROCOPY_RECEIVE.",
		size(rx), size(copied), size(mapped))
	switch {
	case mapped == 0:
		return "receive copied", reason
	case copied == 0:
		return "receive mapped (TCP_ZEROCOPY_RECEIVE): zero-copy taken", reason
	}
	return fmt.Sprintf("receive: %s mapped (TCP_ZEROCOPY_RECEIVE), %s copied", percent(mapped, rx), percent(copied, rx)), reason
}

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func percent(a, b uint64) string {
	r := 100 * ratio(a, b)
	if r > 0 && r < 1 {
		return fmt.Sprintf("%.1f%%", r)
	}
	return fmt.Sprintf("%.0f%%", r)
}

func size(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
