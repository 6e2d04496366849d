package report

import (
	"fmt"
	"sort"
	"strings"
)

// The words of every zero-copy verdict are made here, from the measured
// byte classes of a Zerocopy object and nothing else: `profile`, `run` and
// every renderer use these functions, so one set of facts always reads the
// same way.

// MinorShare is the share of an entry's bytes below which a part does not
// change the verdict: the bulk's zero-copy is "taken" (not "partially")
// when what was copied or not classified is under 1% of the bytes, and
// such a part is named by its size only (headers written before a
// sendfile, a retransmitted skb copied again, a short read before a
// splice).
const MinorShare = 0.01

// allCopiedShare: pinned bytes of which at least this share was copied on
// local delivery are "copied", not "partially taken".
const allCopiedShare = 1 - MinorShare

// VerdictNames says which syscalls moved an entry's zero-copy bytes; the
// byte classes alone do not name them.
type VerdictNames struct {
	Splicer string // spliced sends: "sendfile", "splice" or "sendfile/splice"
	Pinner  string // pinned sends: "MSG_ZEROCOPY", "io_uring SEND_ZC" or "MSG_ZEROCOPY/SEND_ZC"
}

func (n VerdictNames) orDefaults() VerdictNames {
	if n.Splicer == "" {
		n.Splicer = "sendfile/splice"
	}
	if n.Pinner == "" {
		n.Pinner = "MSG_ZEROCOPY/SEND_ZC"
	}
	return n
}

// Judge sets zc.Verdict from its byte classes: send side then receive
// side, each path's bytes bulk first.
func Judge(zc *Zerocopy, names VerdictNames) {
	zc.Names = names
	names = names.orDefaults()
	var parts []string
	if v := txVerdict(zc, names); v != "" {
		parts = append(parts, v)
	}
	if v := rxVerdict(zc); v != "" {
		parts = append(parts, v)
	}
	switch {
	case len(parts) > 0:
		zc.Verdict = strings.Join(parts, "; ")
		if len(zc.Estimated) > 0 {
			zc.Verdict += " (estimated: " + strings.Join(zc.Estimated, ", ") + ")"
		}
	case zc.Source == ZerocopySourceRequest:
		zc.Verdict = "no socket transfers"
	case len(zc.Unavailable) > 0:
		// The accounting may well show tx.* bytes: only the byte classes
		// that did attach saw nothing.
		zc.Verdict = "no TCP bytes classified"
	default:
		zc.Verdict = "no TCP transfers"
	}
	if len(zc.Unavailable) > 0 {
		zc.Verdict += "; cannot tell what " + strings.Join(zc.Unavailable, ", ") + " would show (not attached)"
	}
}

// RxBytes is every byte received on the entry's sockets, by any path.
func (zc *Zerocopy) RxBytes() uint64 {
	return zc.RxCopiedBytes + zc.RxMappedBytes + zc.RxSplicedBytes + zc.RxDiscardedBytes
}

// share is one part of an entry's bytes, in words.
type share struct {
	bytes uint64
	words string // what happened to them, after the size: "written by copy"
	kind  int
	by    string // never-copied bytes: the syscall that sent them
}

func total(s []share) uint64 {
	var n uint64
	for _, p := range s {
		n += p.bytes
	}
	return n
}

// Kinds of sent bytes that were not kept from copies (or not classified),
// for the words of an all-copy verdict.
const (
	copiedPlain = iota
	copiedLater
	copiedZCIgnored
	copiedNoSG
	copiedSource
	copiedULP
	notClassified
)

// txShares are the sent bytes by what happened to them: the ones never
// copied, and the rest largest first.
func txShares(zc *Zerocopy, n VerdictNames) (kept, lost []share) {
	deferred := min(zc.TxDeferredCopyBytes, zc.TxPinnedBytes)
	plain := zc.TxCopiedBytes - min(zc.TxCopiedBytes, zc.TxCopiedZCIgnoredBytes+zc.TxCopiedNoSGBytes+zc.TxSourceCopiedBytes+zc.TxCopiedULPBytes)
	kept = []share{
		{zc.TxSplicedBytes, "by " + n.Splicer + " (page references)", 0, n.Splicer},
		{zc.TxPinnedBytes - deferred, "by " + n.Pinner + " (pinned pages)", 0, n.Pinner},
	}
	lost = []share{
		{plain, "written by copy", copiedPlain, ""},
		{deferred, "of " + n.Pinner + " copied later " + deferredWhereWords(zc), copiedLater, ""},
		{zc.TxCopiedZCIgnoredBytes, "copied: MSG_ZEROCOPY ignored without SO_ZEROCOPY", copiedZCIgnored, ""},
		{zc.TxCopiedNoSGBytes, "copied: zero-copy asked on a route without scatter-gather", copiedNoSG, ""},
		{zc.TxSourceCopiedBytes, "of " + n.Splicer + " copied from a source that cannot splice", copiedSource, ""},
		{zc.TxCopiedULPBytes, "copied into kTLS records", copiedULP, ""},
		{zc.TxUnclassifiedBytes, "unclassified (send decision not seen)", notClassified, ""},
	}
	return nonZero(kept), largestFirst(nonZero(lost))
}

// onlyRequested: the classes are the syscalls' requests and no completion
// said what the kernel then did with the pinned pages. A workload that
// read its own MSG_ZEROCOPY or SEND_ZC completions knows that from their
// COPIED flags, so its pinned bytes were taken or copied later, as those
// say.
func (zc *Zerocopy) onlyRequested() bool {
	return zc.Source == ZerocopySourceRequest && zc.ZCCompletions == 0
}

func txVerdict(zc *Zerocopy, n VerdictNames) string {
	tx := zc.TxBytes
	if tx == 0 {
		return ""
	}
	kept, lost := txShares(zc, n)
	keptBytes := total(kept)
	var keptBy []string
	for _, s := range kept {
		keptBy = append(keptBy, s.by)
	}
	taken := "zero-copy taken"
	switch {
	case zc.onlyRequested():
		taken = "zero-copy requested" // what the kernel then did is not known
	case len(zc.Unavailable) > 0:
		taken = "no copy seen" // a class that would show one is missing
	}
	switch {
	case ratio(tx-min(tx, keptBytes), tx) < MinorShare:
		// "sendfile: zero-copy taken for 1.0 GiB (100%); 1.0 KiB written by copy"
		return strings.Join(keptBy, " and ") + ": " + taken + " for " + ShortSize(keptBytes) + " (" + ShortPercent(keptBytes, tx) + ")" + withShares(lost, tx)
	case ratio(keptBytes, tx) >= MinorShare:
		head := "zero-copy partially taken (" + ShortPercent(keptBytes, tx) + " never copied)"
		if zc.onlyRequested() {
			head = "zero-copy requested for " + ShortPercent(keptBytes, tx)
		}
		return head + ": " + strings.TrimPrefix(withShares(largestFirst(append(kept, lost...)), tx), "; ")
	}
	// (Almost) every byte was copied: in the words of the one cause, or
	// each cause with its share.
	bulk, rest := lost[0], lost[1:]
	if len(rest) > 0 && ratio(rest[0].bytes, tx) >= MinorShare {
		return "copy: every byte copied on send: " + strings.TrimPrefix(withShares(lost, tx), "; ")
	}
	size := ShortSize(bulk.bytes)
	switch bulk.kind {
	case copiedZCIgnored:
		return "MSG_ZEROCOPY ignored: SO_ZEROCOPY not set, every byte copied on send (" + size + ")" + withShares(rest, tx)
	case copiedSource:
		return n.Splicer + " from a source that cannot splice (O_DIRECT, DAX, procfs, /dev/zero ...): " + size + " copied" + withShares(rest, tx)
	case copiedNoSG:
		return "zero-copy requested but " + size + " copied on send: the route has no scatter-gather (TCP-MD5/AO, IPsec)" + withShares(rest, tx)
	case copiedULP:
		return "copy: kTLS (a TCP upper-layer protocol) copied " + size + " into its own records" + withShares(rest, tx)
	case copiedLater:
		if ratio(bulk.bytes, zc.TxPinnedBytes) >= allCopiedShare {
			return n.Pinner + ": zero-copy requested but " + size + " copied on local delivery (" + deferredVia(zc) + ")" + withShares(rest, tx)
		}
	case notClassified:
		return "unclassified: no send decision seen for " + size + withShares(rest, tx)
	}
	return "copy: every byte copied on send (" + size + " written)" + withShares(rest, tx)
}

// Receive paths, for the words of the bulk.
const (
	rxMapped = iota
	rxSpliced
	rxDiscarded
	rxCopied
)

func rxShares(zc *Zerocopy) []share {
	return largestFirst(nonZero([]share{
		{zc.RxMappedBytes, "mapped (TCP_ZEROCOPY_RECEIVE)", rxMapped, ""},
		{zc.RxSplicedBytes, "spliced (page references)", rxSpliced, ""},
		{zc.RxDiscardedBytes, discardedWords(zc), rxDiscarded, ""},
		{zc.RxCopiedBytes, "read by copy", rxCopied, ""},
	}))
}

func rxVerdict(zc *Zerocopy) string {
	rx := zc.RxBytes()
	if rx == 0 {
		return ""
	}
	parts := rxShares(zc)
	bulk, rest := parts[0], parts[1:]
	size := ShortSize(bulk.bytes)
	if len(rest) > 0 && ratio(rx-bulk.bytes, rx) >= MinorShare {
		size += " (" + ShortPercent(bulk.bytes, rx) + ")"
	}
	var head string
	switch bulk.kind {
	case rxMapped:
		head = "receive mapped (TCP_ZEROCOPY_RECEIVE): " + size
	case rxSpliced:
		head = "receive by splice: " + size + " (page references)"
	case rxDiscarded:
		head = "receive: " + size + " " + discardedWords(zc)
	default:
		head = "receive copied: " + size + " read by copy"
	}
	return head + withShares(rest, rx)
}

// discardedWords says what rx_discarded_bytes are: bytes receive calls on
// TCP sockets returned that TCP did not copy to user memory, a MSG_TRUNC
// discard; with a source missing, possibly a copy not traced.
func discardedWords(zc *Zerocopy) string {
	if len(zc.Unavailable) > 0 {
		return "with no copy seen (MSG_TRUNC, or a copy not traced)"
	}
	return "discarded without copy (MSG_TRUNC)"
}

// withShares lists parts as "; <size> (<share>) <words>", the share left
// out under MinorShare.
func withShares(parts []share, total uint64) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString("; " + ShortSize(p.bytes))
		if ratio(p.bytes, total) >= MinorShare {
			b.WriteString(" (" + ShortPercent(p.bytes, total) + ")")
		}
		b.WriteString(" " + p.words)
	}
	return b.String()
}

func nonZero(s []share) []share {
	out := s[:0:0]
	for _, p := range s {
		if p.bytes > 0 {
			out = append(out, p)
		}
	}
	return out
}

func largestFirst(s []share) []share {
	sort.SliceStable(s, func(i, j int) bool { return s[i].bytes > s[j].bytes })
	return s
}

// deferredWhere orders and names the places of deferred copies.
var deferredWhere = []struct{ key, words string }{
	{"loopback", "loopback"}, {"veth", "veth"}, {"packet_tap", "packet tap"}, {"other", "another device"},
}

// deferredVia names where the deferred copies happened.
func deferredVia(zc *Zerocopy) string {
	var names []string
	for _, w := range deferredWhere {
		if zc.TxDeferredVia[w.key] > 0 {
			names = append(names, w.words)
		}
	}
	if len(names) == 0 {
		return "local delivery"
	}
	return strings.Join(names, ", ")
}

// deferredWhereWords: "on local delivery (loopback)" where the copies
// were local deliveries (loopback, veth), else only where they were (a
// packet tap, another device).
func deferredWhereWords(zc *Zerocopy) string {
	for k, n := range zc.TxDeferredVia {
		if n > 0 && k != "loopback" && k != "veth" {
			return "(" + deferredVia(zc) + ")"
		}
	}
	return "on local delivery (" + deferredVia(zc) + ")"
}

// CompletionVerdict says what the zero-copy completions a sender reaped
// tell (what: "completions" of MSG_ZEROCOPY, "notifications" of io_uring
// SEND_ZC; where: the copy's place when all were COPIED).
func CompletionVerdict(method, what string, completions, copied uint64, where string) string {
	switch {
	case completions == 0:
		return method + ": no zero-copy completion was reported"
	case copied == completions:
		return fmt.Sprintf("%s: 100%% of %s %s COPIED: the kernel copied on %s", method, count(completions), what, where)
	case copied == 0:
		return fmt.Sprintf("%s: zero-copy kept: none of %s %s COPIED", method, count(completions), what)
	}
	return fmt.Sprintf("%s: %s of %s %s COPIED: the kernel copied part of the data after all", method, ShortPercent(copied, completions), count(completions), what)
}

// ZerocopyColumn is the short form of a side's verdict for the run table's
// ZERO-COPY column: what happened to the bulk of its sent bytes (sender)
// or received bytes (receiver), with the share.
func ZerocopyColumn(zc *Zerocopy, sender bool) string {
	if zc == nil {
		return ""
	}
	est := ""
	if len(zc.Estimated) > 0 {
		est = " (est.)"
	}
	if sender {
		tx := zc.TxBytes
		if tx == 0 {
			return "-"
		}
		kept, lost := txShares(zc, VerdictNames{}.orDefaults())
		keptBytes := total(kept)
		word := "zero-copy"
		if zc.onlyRequested() {
			word = "zc requested"
		}
		if ratio(keptBytes, tx) >= MinorShare {
			return word + " " + ShortPercent(keptBytes, tx) + est
		}
		switch bulk := lost[0]; bulk.kind {
		case copiedLater:
			return "copied later " + ShortPercent(bulk.bytes, tx) + est
		case notClassified:
			return "unclassified " + ShortPercent(bulk.bytes, tx) + est
		}
		return "copy " + ShortPercent(tx-keptBytes, tx) + est
	}
	rx := zc.RxBytes()
	if rx == 0 {
		return "-"
	}
	bulk := rxShares(zc)[0]
	return [...]string{rxMapped: "mapped", rxSpliced: "spliced", rxDiscarded: "discarded", rxCopied: "copy"}[bulk.kind] + " " + ShortPercent(bulk.bytes, rx) + est
}

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// The lines below are a run cell's own (workload/run chooses which apply).

// NoSGVerdict is a cell's line for zero-copy sends through a device with
// scatter-gather off (what: "completions" or "notifications").
func NoSGVerdict(method, device, what string, completions, copied uint64) string {
	return fmt.Sprintf("%s: every pinned byte was copied at transmit: %s has scatter-gather off, so its software segmentation made linear copies; %s",
		method, device, flaggedCopied(what, completions, copied))
}

// NoSGWords are the verdict and reason of a sender's zerocopy object when
// its pinned pages left through such a device.
func NoSGWords(device, what string, completions, copied uint64) (verdict, reason string) {
	return fmt.Sprintf("zero-copy requested, but copied at transmit: %s has scatter-gather off", device),
		fmt.Sprintf("%s has scatter-gather off (its ethtool setting, read on the sending host at setup): the pages were pinned, "+
			"then its software segmentation copied every pinned byte into linear segments; %s. "+
			"The deferred copy bytes are the pinned bytes, from the device's setting: no probe counts this copy", device, flaggedCopied(what, completions, copied))
}

// flaggedCopied says how many of the sends' completions the kernel flagged
// COPIED, "only" where the flags undercount the copy (a virtio-net on a
// qemu socket netdev flagged all of them, a veth with sg off 86%).
func flaggedCopied(what string, n, copied uint64) string {
	switch {
	case n > 0 && copied >= n:
		return fmt.Sprintf("the kernel flagged all %s %s COPIED", Digits(n), what)
	case copied == 0:
		return fmt.Sprintf("the kernel flagged none of %s %s COPIED", Digits(n), what)
	}
	return fmt.Sprintf("the kernel flagged only %s of %s %s COPIED", WholePercent(copied, n), Digits(n), what)
}

// UnmappedWhy is why a TCP_ZEROCOPY_RECEIVE receiver mapped nothing, to
// follow its verdict: across hosts what arrives is what the receiving
// device's driver put in its buffers, whatever the sender did; on one host
// only a zero-copy sender's deferred copy makes whole pages.
func UnmappedWhy(method string, remote, zerocopySender bool) string {
	switch {
	case remote:
		return ": nothing could be mapped: TCP_ZEROCOPY_RECEIVE maps only whole, page-aligned pages of payload, and the receiving device's buffers held none (an MTU above a page with header split or large receive buffers can)"
	case !zerocopySender:
		return fmt.Sprintf(": pages from %s cannot be mapped (only whole order-0 pages can, as the deferred copy of a zero-copy sender makes them)", method)
	}
	return ""
}

// SoftirqOwnerVerdict says how much NET_RX softirq a side ran and for
// whose sockets (peer: "receiver's" or "sender's").
func SoftirqOwnerVerdict(side, peer string, so *SoftirqOwner, onCPUNS uint64) string {
	return fmt.Sprintf("%s ran %s of NET_RX softirq (%s of its CPU), ~%s of it for the %s socket, ~%s for its own (estimate)",
		side, Seconds(so.NetRxNS), WholePercent(so.NetRxNS, onCPUNS), WholePercent(so.ForPeerNS, so.NetRxNS), peer, WholePercent(so.ForOwnNS, so.NetRxNS))
}

// PayloadErrorsVerdict: the receiver found chunks unlike what was sent.
func PayloadErrorsVerdict(n uint64) string {
	return fmt.Sprintf("receiver: %s chunks did not match the sent pattern", Digits(n))
}
