package run

import (
	"fmt"
	"slices"

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
		if !slices.Contains(zc.Estimated, "tx_deferred_copy_bytes") {
			zc.Estimated = append(zc.Estimated, "tx_deferred_copy_bytes") // from the device's setting
		}
		zc.Verdict = fmt.Sprintf("zero-copy requested, but copied at transmit: %s has scatter-gather off", w.TxDevice)
		zc.Reason = fmt.Sprintf("%s has scatter-gather off (its ethtool setting, read on the sending host at setup): the pages were pinned, "+
			"then its software segmentation copied every pinned byte into linear segments; %s. "+
			"The deferred copy bytes are the pinned bytes, from the device's setting: no probe counts this copy", w.TxDevice, flaggedCopied(w, completionsOf(c.Method)))
	}
	fix(c.Sender.Zerocopy)
	for i := range c.Sender.Paths {
		fix(c.Sender.Paths[i].Zerocopy)
	}
}

// noSGVerdict is the cell's verdict line for such sends.
func noSGVerdict(c report.Cell, what string) string {
	w := c.Workload
	return fmt.Sprintf("%s: every pinned byte was copied at transmit: %s has scatter-gather off, so its software segmentation made linear copies; %s",
		c.Method, w.TxDevice, flaggedCopied(w, what))
}

// flaggedCopied says how many of the sends' completions the kernel flagged
// COPIED, "only" where the flags undercount the copy (a virtio-net on a
// qemu socket netdev flagged all of them, a veth with sg off 86%).
func flaggedCopied(w *report.Workload, what string) string {
	switch n := w.ZCCompletions; {
	case n > 0 && w.ZCCopied >= n:
		return fmt.Sprintf("the kernel flagged all %s %s COPIED", count(n), what)
	case w.ZCCopied == 0:
		return fmt.Sprintf("the kernel flagged none of %s %s COPIED", count(n), what)
	}
	return fmt.Sprintf("the kernel flagged only %s of %s %s COPIED", pct(w.ZCCopied, w.ZCCompletions), count(w.ZCCompletions), what)
}
