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
		what := completionsOf(c.Method)
		if w.ZCCompletions > 0 && w.TxDeviceNoSG {
			out = append(out, noSGVerdict(c, what))
		} else {
			out = append(out, report.CompletionVerdict(c.Method, what, w.ZCCompletions, w.ZCCopied, localDelivery(c.Topology)))
		}
	}
	// What the kernel did with each side's bytes: the byte classes, in
	// the words `profile` uses.
	if zc := c.Sender.Zerocopy; zc != nil {
		out = append(out, "sender: "+zc.Verdict)
	}
	if zc := c.Receiver.Zerocopy; zc != nil {
		line := "receiver: " + zc.Verdict
		switch {
		case c.RxMethod != workload.RxZerocopy || zc.RxMappedBytes != 0:
		case c.Topology == workload.TopoRemote:
			// What arrives is what the receiving device's driver put in
			// its buffers, whatever the sender did.
			line += ": nothing could be mapped: TCP_ZEROCOPY_RECEIVE maps only whole, page-aligned pages of payload, and the receiving device's buffers held none (an MTU above a page with header split or large receive buffers can)"
		case !zerocopyMethod(c.Method):
			line += fmt.Sprintf(": pages from %s cannot be mapped (only whole order-0 pages can, as the deferred copy of a zero-copy sender makes them)", c.Method)
		}
		out = append(out, line)
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

// completionsOf names what tells a zero-copy method's sender that the
// kernel is done with its pages.
func completionsOf(method string) string {
	if method == workload.MethodIOUringZC {
		return "notifications"
	}
	return "completions"
}

func count(n uint64) string { return report.Digits(n) }
