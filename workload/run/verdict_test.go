package run

import (
	"slices"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/workload"
)

// A cell's verdicts come from its measured byte classes, not from the
// method's name: a sendfile whose source could not splice is a copy, a
// MSG_TRUNC receiver discarded, io_uring SEND copied.
func TestCellVerdictsFromByteClasses(t *testing.T) {
	const n = 16 << 20
	kernel := func(zc report.Zerocopy) *report.Zerocopy { zc.Source = report.ZerocopySourceKernel; return &zc }
	request := func(zc report.Zerocopy) *report.Zerocopy { zc.Source = report.ZerocopySourceRequest; return &zc }
	cases := []struct {
		name             string
		method, rx       string
		topology         string // default loopback
		sender, receiver *report.Zerocopy
		workload         report.Workload
		verdicts         []string // exact, after the completions line if any
		column           [2]string
		estimated        []string
	}{
		{
			name: "sendfile from a source that cannot splice", method: workload.MethodSendfile, rx: workload.RxRead,
			sender:   kernel(report.Zerocopy{TxBytes: n, TxCopiedBytes: n, TxSourceCopiedBytes: n}),
			receiver: kernel(report.Zerocopy{RxCopiedBytes: n}),
			verdicts: []string{"sender: sendfile from a source that cannot splice (O_DIRECT, DAX, procfs, /dev/zero ...): 16.0 MiB copied",
				"receiver: receive copied: 16.0 MiB read by copy"},
			column: [2]string{"copy 100%", "copy 100%"},
		},
		{
			name: "splice to a MSG_TRUNC receiver", method: workload.MethodSplice, rx: workload.RxTrunc,
			sender:   kernel(report.Zerocopy{TxBytes: n, TxSplicedBytes: n}),
			receiver: kernel(report.Zerocopy{RxDiscardedBytes: n}),
			workload: report.Workload{ReceivedBytes: n},
			verdicts: []string{"sender: splice: zero-copy taken for 16.0 MiB (100%)", "receiver: receive: 16.0 MiB discarded without copy (MSG_TRUNC)"},
			column:   [2]string{"zero-copy 100%", "discarded 100%"},
		},
		{
			name: "vmsplice to a splice receiver", method: workload.MethodVmsplice, rx: workload.RxSplice,
			sender:   kernel(report.Zerocopy{TxBytes: n, TxSplicedBytes: n}),
			receiver: kernel(report.Zerocopy{RxSplicedBytes: n}),
			workload: report.Workload{ReceivedBytes: n},
			verdicts: []string{"sender: vmsplice: zero-copy taken for 16.0 MiB (100%)", "receiver: receive by splice: 16.0 MiB (page references)"},
			column:   [2]string{"zero-copy 100%", "spliced 100%"},
		},
		{
			name: "io_uring SEND without byte classes is a copy", method: workload.MethodIOUring, rx: workload.RxRead,
			sender:   request(report.Zerocopy{TxBytes: n, TxUnclassifiedBytes: n}),
			receiver: request(report.Zerocopy{RxCopiedBytes: n}),
			workload: report.Workload{ReceivedBytes: n},
			verdicts: []string{"sender: copy: every byte copied on send (16.0 MiB written)", "receiver: receive copied: 16.0 MiB read by copy"},
			column:   [2]string{"copy 100%", "copy 100%"},
		},
		{
			name: "MSG_ZEROCOPY without byte classes: deferred copies estimated", method: workload.MethodMsgZerocopy, rx: workload.RxTrunc,
			sender:   request(report.Zerocopy{TxBytes: n, TxPinnedBytes: n}),
			receiver: request(report.Zerocopy{RxCopiedBytes: n}), // rx.read by request
			workload: report.Workload{ReceivedBytes: n, ZCCompletions: 256, ZCCopied: 256},
			verdicts: []string{"msg_zerocopy: 100% of 256 completions COPIED: the kernel copied on local delivery (loopback)",
				"sender: MSG_ZEROCOPY: zero-copy requested but 16.0 MiB copied on local delivery (loopback) (estimated: tx_deferred_copy_bytes, tx_deferred_copy_via)",
				"receiver: receive: 16.0 MiB discarded without copy (MSG_TRUNC)"},
			column:    [2]string{"copied later 100% (est.), COPIED 100% of 256", "discarded 100%"},
			estimated: []string{"tx_deferred_copy_bytes", "tx_deferred_copy_via"},
		},
		{
			// 6.1 across a NIC: no tracepoint gives io_uring's bytes, and
			// what the kernel copied it did on its way out, not by a
			// local delivery.
			name: "SEND_ZC across hosts without byte classes", method: workload.MethodIOUringZC, rx: workload.RxRead, topology: workload.TopoRemote,
			sender:   request(report.Zerocopy{}),
			receiver: request(report.Zerocopy{RxCopiedBytes: n}),
			workload: report.Workload{SentBytes: n, ReceivedBytes: n, ZCCompletions: 256, ZCCopied: 64},
			verdicts: []string{"io_uring_zc: 25% of 256 notifications COPIED: the kernel copied part of the data after all",
				"sender: zero-copy partially taken (75% never copied): 12.0 MiB (75%) by io_uring SEND_ZC (pinned pages); 4.0 MiB (25%) of io_uring SEND_ZC copied later (another device) (estimated: tx_deferred_copy_bytes, tx_deferred_copy_via)",
				"receiver: receive copied: 16.0 MiB read by copy"},
			column:    [2]string{"zero-copy 75% (est.), COPIED 25% of 256", "copy 100%"},
			estimated: []string{"tx_deferred_copy_bytes", "tx_deferred_copy_via"},
		},
		{
			// 6.1 across a NIC, no notification COPIED: the kernel's
			// flags say the pages went out pinned.
			name: "SEND_ZC across hosts without byte classes, none copied", method: workload.MethodIOUringZC, rx: workload.RxRead, topology: workload.TopoRemote,
			sender:   request(report.Zerocopy{}),
			receiver: request(report.Zerocopy{RxCopiedBytes: n}),
			workload: report.Workload{SentBytes: n, ReceivedBytes: n, ZCCompletions: 256},
			verdicts: []string{"io_uring_zc: zero-copy kept: none of 256 notifications COPIED",
				"sender: io_uring SEND_ZC: zero-copy taken for 16.0 MiB (100%) (estimated: tx_deferred_copy_bytes, tx_deferred_copy_via)",
				"receiver: receive copied: 16.0 MiB read by copy"},
			column:    [2]string{"zero-copy 100% (est.), COPIED 0% of 256", "copy 100%"},
			estimated: []string{"tx_deferred_copy_bytes", "tx_deferred_copy_via"},
		},
		{
			// Across hosts the receiver maps what its NIC's driver
			// received, whatever the sender's method.
			name: "zerocopy receive across hosts, nothing mapped", method: workload.MethodMsgZerocopy, rx: workload.RxZerocopy, topology: workload.TopoRemote,
			sender:   kernel(report.Zerocopy{TxBytes: n, TxPinnedBytes: n}),
			receiver: kernel(report.Zerocopy{RxCopiedBytes: n}),
			workload: report.Workload{ReceivedBytes: n, RxCopiedBytes: n, ZCCompletions: 256},
			verdicts: []string{"msg_zerocopy: zero-copy kept: none of 256 completions COPIED",
				"sender: MSG_ZEROCOPY: zero-copy taken for 16.0 MiB (100%)",
				"receiver: receive copied: 16.0 MiB read by copy: nothing could be mapped: TCP_ZEROCOPY_RECEIVE maps only whole, page-aligned pages of payload, and the receiving device's buffers held none (an MTU above a page with header split or large receive buffers can)"},
			column: [2]string{"zero-copy 100%, COPIED 0% of 256", "copy 100%"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := c.workload
			topo := c.topology
			if topo == "" {
				topo = workload.TopoLoopback
			}
			cell := report.Cell{Method: c.method, RxMethod: c.rx, Topology: topo,
				Sender: report.Process{Zerocopy: c.sender}, Receiver: report.Process{Zerocopy: c.receiver}, Workload: &w}
			applyFacts(&cell)
			if !slices.Equal(cell.Verdicts, c.verdicts) {
				t.Errorf("verdicts\n got %q\nwant %q", cell.Verdicts, c.verdicts)
			}
			if !slices.Equal(cell.Sender.Zerocopy.Estimated, c.estimated) {
				t.Errorf("estimated %q, want %q", cell.Sender.Zerocopy.Estimated, c.estimated)
			}
			var table strings.Builder
			if err := report.WriteRunTable(&table, &report.Document{Cells: []report.Cell{cell}}); err != nil {
				t.Fatal(err)
			}
			for _, col := range c.column {
				if !strings.Contains(table.String(), "  "+col+"\n") {
					t.Errorf("ZERO-COPY column lacks %q:\n%s", col, table.String())
				}
			}
			// Judged again on a mean of repeats: the same words.
			again := cell
			applyFacts(&again)
			if !slices.Equal(again.Verdicts, cell.Verdicts) {
				t.Errorf("second pass %q", again.Verdicts)
			}
		})
	}
}

// Through a device without scatter-gather every pinned byte is copied at
// transmit, and the verdict says how far the kernel's COPIED flags
// undercount it: "only" a share, all of them, or none.
func TestNoScatterGatherVerdictWording(t *testing.T) {
	for _, c := range []struct {
		method     string
		copied, of uint64
		want       string
	}{
		{workload.MethodMsgZerocopy, 220, 256, "msg_zerocopy: every pinned byte was copied at transmit: eth0 has scatter-gather off, so its software segmentation made linear copies; the kernel flagged only 86% of 256 completions COPIED"},
		{workload.MethodMsgZerocopy, 256, 256, "msg_zerocopy: every pinned byte was copied at transmit: eth0 has scatter-gather off, so its software segmentation made linear copies; the kernel flagged all 256 completions COPIED"},
		{workload.MethodIOUringZC, 0, 1024, "io_uring_zc: every pinned byte was copied at transmit: eth0 has scatter-gather off, so its software segmentation made linear copies; the kernel flagged none of 1,024 notifications COPIED"},
	} {
		cell := report.Cell{Method: c.method, Workload: &report.Workload{TxDevice: "eth0", TxDeviceNoSG: true, ZCCompletions: c.of, ZCCopied: c.copied},
			Sender: report.Process{Zerocopy: &report.Zerocopy{TxBytes: 16 << 20, TxPinnedBytes: 16 << 20}}}
		noSGFacts(&cell)
		if got := verdicts(cell); len(got) == 0 || got[0] != c.want {
			t.Errorf("%d of %d COPIED: verdicts %q, want %q first", c.copied, c.of, got, c.want)
		}
		flags := c.want[strings.LastIndex(c.want, "; ")+2:] // the reason says the same of the flags
		if zc := cell.Sender.Zerocopy; zc.TxDeferredCopyBytes != 16<<20 || !strings.Contains(zc.Reason, flags) {
			t.Errorf("%d of %d COPIED: deferred copy %d, reason %q", c.copied, c.of, zc.TxDeferredCopyBytes, zc.Reason)
		}
		// Inferred from the device's setting, not counted: the JSON says so.
		if est := cell.Sender.Zerocopy.Estimated; !slices.Equal(est, []string{"tx_deferred_copy_bytes"}) {
			t.Errorf("%d of %d COPIED: estimated %q, want the deferred copy bytes", c.copied, c.of, est)
		}
	}
}
