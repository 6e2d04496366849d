package run

import (
	"fmt"

	"github.com/zcprof/zcprof/profiler/report"
)

// noSGFacts corrects the byte classes of zero-copy sends that left through
// a device with scatter-gather off. TCP still pins the pages (software
// segmentation gives every TCP route scatter-gather), then the device's
// software segmentation copies every pinned byte into linear segments at
// transmit. Neither the copy probes nor the kernel's COPIED flag say so:
// no skb_copy_ubufs runs, and only skbs linearized whole flag their
// completion (86% of completions through a veth with sg off here).
func noSGFacts(c *report.Cell) {
	w := c.Workload
	if !w.TxDeviceNoSG || !zerocopyMethod(c.Method) {
		return
	}
	fix := func(zc *report.Zerocopy) {
		if zc == nil || zc.TxPinnedBytes == 0 {
			return
		}
		zc.TxDeferredCopyBytes = zc.TxPinnedBytes
		zc.Verdict = fmt.Sprintf("zero-copy requested, but copied at transmit: %s has scatter-gather off", w.TxDevice)
		zc.Reason = fmt.Sprintf("%s has scatter-gather off (its ethtool setting, read on the sending host at setup): the pages were pinned, "+
			"then its software segmentation copied every pinned byte into linear segments; the kernel flagged only %s of completions COPIED. "+
			"The deferred copy bytes are the pinned bytes, from the device's setting: no probe counts this copy", w.TxDevice, pct(w.ZCCopied, w.ZCCompletions))
	}
	fix(c.Sender.Zerocopy)
	for i := range c.Sender.Paths {
		fix(c.Sender.Paths[i].Zerocopy)
	}
}

// noSGVerdict is the cell's verdict line for such sends.
func noSGVerdict(c report.Cell, what string) string {
	w := c.Workload
	return fmt.Sprintf("%s: every pinned byte was copied at transmit: %s has scatter-gather off, so its software segmentation made linear copies; the kernel flagged only %s of %s %s COPIED",
		c.Method, w.TxDevice, pct(w.ZCCopied, w.ZCCompletions), count(w.ZCCompletions), what)
}
