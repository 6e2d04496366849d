package run

import (
	"fmt"

	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/workload"
)

// cellName is how tables and verdicts name a cell.
func cellName(c report.Cell) string {
	return fmt.Sprintf("%s→%s %s ×%d", c.Method, c.RxMethod, report.SizeString(c.Size), c.Streams)
}

// verdicts says in plain words what the kernel did with the bytes, from
// the workload's own facts and the exact accounting.
func verdicts(c report.Cell) []string {
	w := c.Workload
	var out []string
	switch c.Method {
	case workload.MethodMsgZerocopy, workload.MethodIOUringZC:
		what := "completions"
		if c.Method == workload.MethodIOUringZC {
			what = "notifications"
		}
		switch {
		case w.ZCCompletions == 0:
			out = append(out, fmt.Sprintf("%s: no zero-copy completion was reported", c.Method))
		case w.ZCCopied == w.ZCCompletions:
			out = append(out, fmt.Sprintf("%s: 100%% of %s %s COPIED: the kernel copied on %s", c.Method, count(w.ZCCompletions), what, localDelivery(c.Topology)))
		case w.ZCCopied == 0:
			out = append(out, fmt.Sprintf("%s: zero-copy kept: none of %s %s COPIED", c.Method, count(w.ZCCompletions), what))
		default:
			out = append(out, fmt.Sprintf("%s: %s of %s %s COPIED: the kernel copied part of the data after all", c.Method, pct(w.ZCCopied, w.ZCCompletions), count(w.ZCCompletions), what))
		}
	case workload.MethodSendfile:
		out = append(out, "sendfile: no transmit copy: page-cache pages are referenced into the socket")
	case workload.MethodSplice:
		out = append(out, "splice: no transmit copy: file pages are referenced through a pipe into the socket")
	case workload.MethodVmsplice:
		out = append(out, "vmsplice: no transmit copy: user pages are referenced (and nothing says when they are free again)")
	case workload.MethodIOUring:
		out = append(out, "io_uring: IORING_OP_SEND copies into the socket like send()")
	default:
		out = append(out, fmt.Sprintf("%s: every byte is copied into the socket", c.Method))
	}
	switch c.RxMethod {
	case workload.RxZerocopy:
		line := fmt.Sprintf("zerocopy receive: %s of bytes mapped, %s copied", pct(w.RxMappedBytes, w.ReceivedBytes), pct(w.RxCopiedBytes, w.ReceivedBytes))
		if w.RxMappedBytes == 0 && !zerocopyMethod(c.Method) {
			line += fmt.Sprintf(": pages from %s cannot be mapped (only whole order-0 pages can, as the deferred copy of a zero-copy sender makes them)", c.Method)
		}
		out = append(out, line)
	case workload.RxTrunc:
		out = append(out, "receiver: no copy, MSG_TRUNC discards the bytes in the kernel")
	case workload.RxSplice:
		out = append(out, "receiver: spliced into a pipe: page frags referenced, only linear skb parts copied")
	}
	for _, side := range []struct {
		name string
		p    report.Process
		peer string
	}{{"sender", c.Sender, "receiver's"}, {"receiver", c.Receiver, "sender's"}} {
		so := side.p.SoftirqOwner
		if so == nil || so.NetRxNS == 0 || so.NetRxNS*100 < side.p.CPU.OnCPUNS*5 {
			continue // under 5% of its CPU: not worth a line
		}
		out = append(out, fmt.Sprintf("%s ran %s of NET_RX softirq (%s of its CPU), ~%s of it for the %s socket, ~%s for its own (estimate)",
			side.name, report.Seconds(so.NetRxNS), pct(so.NetRxNS, side.p.CPU.OnCPUNS), pct(so.ForPeerNS, so.NetRxNS), side.peer, pct(so.ForOwnNS, so.NetRxNS)))
	}
	if w.PayloadErrors > 0 {
		out = append(out, fmt.Sprintf("receiver: %s chunks did not match the sent pattern", count(w.PayloadErrors)))
	}
	return out
}

func count(n uint64) string {
	s := fmt.Sprint(n)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}
