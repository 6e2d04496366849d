package run

import (
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
	if zc := c.Receiver.Zerocopy; zc != nil {
		receiverFacts(c.RxMethod, w, zc)
	}
	// The words come from the byte classes, as in `profile`, named by the
	// method the cell ran (means of repeats are judged again).
	for _, zc := range []*report.Zerocopy{c.Sender.Zerocopy, c.Receiver.Zerocopy} {
		if zc != nil {
			report.Judge(zc, verdictNames(c.Method))
		}
	}
	// After the words: a device without scatter-gather copied what the
	// byte classes saw pinned (nosg.go).
	noSGFacts(c)
	c.Verdicts = verdicts(*c)
}

func zerocopyMethod(m string) bool {
	return m == workload.MethodMsgZerocopy || m == workload.MethodIOUringZC
}

// uringMethod: the method sends through an io_uring ring, whose send bytes
// the accounting counts per sock_sendmsg.
func uringMethod(m string) bool {
	return m == workload.MethodIOUring || m == workload.MethodIOUringZC
}

// verdictNames names the cell's send method for the verdict words.
func verdictNames(method string) report.VerdictNames {
	switch method {
	case workload.MethodSendfile, workload.MethodSplice, workload.MethodVmsplice:
		return report.VerdictNames{Splicer: method}
	case workload.MethodMsgZerocopy:
		return report.VerdictNames{Pinner: "MSG_ZEROCOPY"}
	case workload.MethodIOUringZC:
		return report.VerdictNames{Pinner: "io_uring SEND_ZC"}
	}
	return report.VerdictNames{}
}

// senderFacts fills in, where the byte-class programs did not see the
// kernel's decisions, what the workload itself knows: which io_uring
// opcode it submitted, and the zero-copy completions the kernel reported,
// from which the deferred copies are estimated.
func senderFacts(method, topo string, w *report.Workload, zc *report.Zerocopy) {
	zc.Estimated = nil
	switch method {
	case workload.MethodIOUring:
		// IORING_OP_SEND copies like send(): not pinned.
		zc.TxCopiedBytes += zc.TxUnclassifiedBytes
		zc.TxUnclassifiedBytes = 0
	case workload.MethodIOUringZC:
		zc.TxPinnedBytes += zc.TxUnclassifiedBytes
		zc.TxUnclassifiedBytes = 0
	}
	if !zerocopyMethod(method) || w.ZCCompletions == 0 {
		return
	}
	pinnedFromWorkload := false
	if zc.TxPinnedBytes == 0 && method == workload.MethodIOUringZC {
		// Before 6.3 no tracepoint gives io_uring's send bytes (the
		// syscall returns a count of requests): every SEND_ZC that
		// completed pinned its bytes, as its notification proves.
		zc.TxPinnedBytes, pinnedFromWorkload = w.SentBytes, true
		zc.TxBytes = zc.TxCopiedBytes + zc.TxSplicedBytes + zc.TxPinnedBytes + zc.TxUnclassifiedBytes
	}
	zc.ZCCompletions, zc.ZCCompletionsCopied = w.ZCCompletions, w.ZCCopied
	zc.TxDeferredCopyBytes = uint64(float64(zc.TxPinnedBytes) * float64(w.ZCCopied) / float64(w.ZCCompletions))
	zc.TxDeferredVia = nil
	if zc.TxDeferredCopyBytes > 0 {
		zc.TxDeferredVia = map[string]uint64{localDeliveryVia(topo): zc.TxDeferredCopyBytes}
	}
	zc.Estimated = []string{"tx_deferred_copy_bytes", "tx_deferred_copy_via"}
	zc.Reason = "deferred copies from the workload's own completions (COPIED flag), in proportion; the kernel merges adjacent notification ranges keeping the first one's flag, so the share is approximate"
	if pinnedFromWorkload {
		zc.Reason += "; pinned bytes are the workload's completed SEND_ZC bytes (this kernel has no sock_send_length tracepoint)"
	}
}

// receiverFacts fills in, without the byte-class programs, what the
// receiver counted itself: the syscalls tell only the path, the receiver
// knows it passed MSG_TRUNC or mapped pages.
func receiverFacts(rx string, w *report.Workload, zc *report.Zerocopy) {
	if zc.Source == report.ZerocopySourceKernel {
		return
	}
	zc.RxMappedBytes, zc.RxCopiedBytes, zc.RxSplicedBytes, zc.RxDiscardedBytes = 0, 0, 0, 0
	switch rx {
	case workload.RxRead:
		zc.RxCopiedBytes = w.ReceivedBytes
	case workload.RxZerocopy:
		zc.RxMappedBytes, zc.RxCopiedBytes = w.RxMappedBytes, w.RxCopiedBytes
	case workload.RxTrunc:
		zc.RxDiscardedBytes = w.ReceivedBytes
	case workload.RxSplice:
		zc.RxSplicedBytes = w.ReceivedBytes
	}
	zc.Reason = "receive byte classes from the workload's own counts"
}

// localDeliveryVia is where a deferred copy happens on the topology, as
// tx_deferred_copy_via names it. Across hosts nothing is delivered
// locally: the sender's kernel copied on its way out (a retransmission of
// an skb its device still held, a device that cannot take the pages).
func localDeliveryVia(topo string) string {
	switch topo {
	case workload.TopoNetns:
		return "veth"
	case workload.TopoRemote:
		return "other"
	}
	return "loopback"
}

func localDelivery(topo string) string {
	if topo == workload.TopoRemote {
		return "the sending host's transmit path (not local delivery: the receiver is another host)"
	}
	if topo == workload.TopoNetns {
		return "local delivery (veth into a namespace of this host)"
	}
	return "local delivery (loopback)"
}
