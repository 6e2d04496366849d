package run

import (
	"fmt"

	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/workload"
)

// applyFacts puts the workload's own observations into the cell: service
// demand, the zero-copy byte classes the syscalls cannot show (deferred
// copies reported by COPIED notifications, bytes mapped on receive), and
// the verdict lines. It only reads figures that are means with repeats,
// so it runs again on the averaged cell.
func applyFacts(c *report.Cell) {
	w := c.Workload
	c.SenderNSPerMiB = serviceDemand(c.Sender.CPU.OnCPUNS, w.ReceivedBytes)
	c.ReceiverNSPerMiB = serviceDemand(c.Receiver.CPU.OnCPUNS, w.ReceivedBytes)
	// Byte classes the kernel's own decisions gave (the session's
	// byte-class programs) are kept; the workload's facts fill in only
	// where the classes come from the syscall requests.
	zc := c.Sender.Zerocopy
	if zc != nil && zc.Source == report.ZerocopySourceKernel && c.Method == workload.MethodIOUringZC && zc.TxPinnedBytes == 0 {
		// Before 6.3 the byte-class programs see no io_uring send (no
		// sock_send_length); the workload's completions say what happened.
		zc.Source = report.ZerocopySourceRequest
	}
	if zc != nil && zc.Source != report.ZerocopySourceKernel {
		senderFacts(c.Method, c.Topology, w, zc)
	}
	if zc := c.Receiver.Zerocopy; zc != nil && zc.Source != report.ZerocopySourceKernel {
		receiverFacts(c.RxMethod, w, zc)
	}
	c.Verdicts = verdicts(*c)
}

func zerocopyMethod(m string) bool {
	return m == workload.MethodMsgZerocopy || m == workload.MethodIOUringZC
}

func senderFacts(method, topo string, w *report.Workload, zc *report.Zerocopy) {
	switch {
	case zerocopyMethod(method) && w.ZCCompletions > 0:
		pinnedFromWorkload := false
		if zc.TxPinnedBytes == 0 && method == workload.MethodIOUringZC {
			// Before 6.3 no tracepoint gives io_uring's send bytes (the
			// syscall returns a count of requests): every SEND_ZC that
			// completed pinned its bytes, as its notification proves.
			zc.TxPinnedBytes, pinnedFromWorkload = w.SentBytes, true
		}
		zc.TxDeferredCopyBytes = uint64(float64(zc.TxPinnedBytes) * float64(w.ZCCopied) / float64(w.ZCCompletions))
		zc.Verdict = fmt.Sprintf("zero-copy requested; %s of completions COPIED", pct(w.ZCCopied, w.ZCCompletions))
		if w.ZCCopied > 0 {
			zc.Verdict += ": the kernel copied later, on " + localDelivery(topo)
		}
		zc.Reason = "deferred copies from the workload's own completions (COPIED flag), in proportion; the kernel merges adjacent notification ranges keeping the first one's flag, so the share is approximate"
		if pinnedFromWorkload {
			zc.Reason += "; pinned bytes are the workload's completed SEND_ZC bytes (this kernel has no sock_send_length tracepoint)"
		}
	case zerocopyMethod(method):
		zc.Verdict = "zero-copy requested; no completion reported"
	case method == workload.MethodSendfile || method == workload.MethodSplice || method == workload.MethodVmsplice:
		zc.Verdict = "no transmit copy: pages referenced into the socket"
	}
}

func receiverFacts(rx string, w *report.Workload, zc *report.Zerocopy) {
	zc.RxMappedBytes, zc.RxCopiedBytes = 0, 0
	switch rx {
	case workload.RxRead:
		zc.RxCopiedBytes = w.ReceivedBytes
		zc.Verdict = "copy (read)"
	case workload.RxZerocopy:
		zc.RxMappedBytes, zc.RxCopiedBytes = w.RxMappedBytes, w.RxCopiedBytes
		zc.Verdict = fmt.Sprintf("TCP_ZEROCOPY_RECEIVE mapped %s of bytes", pct(w.RxMappedBytes, w.RxMappedBytes+w.RxCopiedBytes))
	case workload.RxTrunc:
		zc.Verdict = "no copy: MSG_TRUNC discards the bytes"
	case workload.RxSplice:
		zc.Verdict = "splice to a pipe: page frags referenced (an skb's linear part is copied)"
	}
	zc.Reason = "receive byte classes from the workload's own counts"
}

func localDelivery(topo string) string {
	if topo == workload.TopoNetns {
		return "local delivery (veth into a namespace of this host)"
	}
	return "local delivery (loopback)"
}

// pct formats a/b as a percentage, "-" without a denominator.
func pct(a, b uint64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(a)/float64(b))
}
