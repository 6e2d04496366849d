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
			out = append(out, report.NoSGVerdict(c.Method, w.TxDevice, what, w.ZCCompletions, w.ZCCopied))
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
		if c.RxMethod == workload.RxZerocopy && zc.RxMappedBytes == 0 {
			line += report.UnmappedWhy(c.Method, c.Topology == workload.TopoRemote, zerocopyMethod(c.Method))
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
		out = append(out, report.SoftirqOwnerVerdict(side.name, side.peer, so, side.p.CPU.OnCPUNS))
	}
	if w.PayloadErrors > 0 {
		out = append(out, report.PayloadErrorsVerdict(w.PayloadErrors))
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
