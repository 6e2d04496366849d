package run

import (
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
		zc.Verdict, zc.Reason = report.NoSGWords(w.TxDevice, completionsOf(c.Method), w.ZCCompletions, w.ZCCopied)
	}
	fix(c.Sender.Zerocopy)
	for i := range c.Sender.Paths {
		fix(c.Sender.Paths[i].Zerocopy)
	}
}
