package run

import (
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/report"
)

func TestMeanOf(t *testing.T) {
	got := meanOf([]report.CPU{
		{OnCPUNS: 10, UserNS: 1, SchedstatBoundaryNS: -3},
		{OnCPUNS: 20, UserNS: 2, SchedstatBoundaryNS: 1},
	})
	if got.OnCPUNS != 15 || got.UserNS != 2 || got.SchedstatBoundaryNS != -1 {
		t.Errorf("meanOf = %+v", got)
	}
}

func TestMeanCell(t *testing.T) {
	mk := func(tput float64, snd, rcv uint64, copied uint64, extra bool) report.Cell {
		paths := []report.Path{{Path: "tx.msg_zerocopy", Calls: 10, Bytes: 1 << 20, CPUNS: snd / 2, Softirq: map[string]uint64{"softirq.net_rx": 4}}}
		if extra {
			paths = append(paths, report.Path{Path: "wait", Calls: 2, CPUNS: 6})
		}
		return report.Cell{
			Method: "msg_zerocopy", RxMethod: "read", Topology: "loopback", Repeats: 1, ThroughputBps: tput,
			Sender:   report.Process{CPU: report.CPU{OnCPUNS: snd}, Paths: paths, Zerocopy: &report.Zerocopy{TxPinnedBytes: 1 << 20}},
			Receiver: report.Process{CPU: report.CPU{OnCPUNS: rcv}, Zerocopy: &report.Zerocopy{}},
			Workload: &report.Workload{ReceivedBytes: 1 << 20, ZCCompletions: 10, ZCCopied: copied},
		}
	}
	c := meanCell([]report.Cell{mk(100, 1000, 3000, 10, false), mk(300, 3000, 5000, 10, true)})
	if c.Repeats != 2 || c.ThroughputBps != 200 || c.Sender.CPU.OnCPUNS != 2000 || c.Receiver.CPU.OnCPUNS != 4000 {
		t.Errorf("means: %+v", c)
	}
	if c.SenderNSPerMiB != 2000 || c.ReceiverNSPerMiB != 4000 {
		t.Errorf("service demand %v / %v", c.SenderNSPerMiB, c.ReceiverNSPerMiB)
	}
	if len(c.Sender.Paths) != 2 {
		t.Fatalf("paths %+v", c.Sender.Paths)
	}
	tx, wait := c.Sender.Paths[0], c.Sender.Paths[1]
	if tx.CPUNS != 1000 || tx.Calls != 10 || tx.Softirq["softirq.net_rx"] != 4 || tx.NSPerCall != 100 {
		t.Errorf("tx path %+v", tx)
	}
	if wait.Calls != 1 || wait.CPUNS != 3 { // absent from the first run: zero there
		t.Errorf("wait path %+v", wait)
	}
	if zc := c.Sender.Zerocopy; zc.TxDeferredCopyBytes != 1<<20 {
		t.Errorf("deferred copy %d", zc.TxDeferredCopyBytes)
	}
	if len(c.Verdicts) == 0 || c.Verdicts[0] != "msg_zerocopy: 100% of 10 completions COPIED: the kernel copied on local delivery (loopback)" {
		t.Errorf("verdicts %q", c.Verdicts)
	}
}

func TestConverged(t *testing.T) {
	ci := &CI{Level: 0.95, WidthPct: 5}
	tight := func(v float64) []report.Cell {
		var out []report.Cell
		for _, d := range []float64{-0.001, 0, 0.001} {
			out = append(out, report.Cell{ThroughputBps: v * (1 + d),
				Sender:   report.Process{CPU: report.CPU{OnCPUNS: uint64(1e9 * (1 + d))}},
				Receiver: report.Process{CPU: report.CPU{OnCPUNS: uint64(2e9 * (1 - d))}}})
		}
		return out
	}
	if !converged(cellStats(tight(1e10), 0.95), ci) {
		t.Error("0.1% spread did not converge")
	}
	loose := tight(1e10)
	loose[2].Receiver.CPU.OnCPUNS = 3e9 // one side noisy: not yet
	if converged(cellStats(loose, 0.95), ci) {
		t.Error("a noisy receiver CPU converged")
	}
}

// Categories and traced functions survive --repeat: means per name (absent
// = 0), intervals in quadrature over n, exact only if every run's was.
func TestMeanPathsCategories(t *testing.T) {
	runs := [][]report.Path{
		{{Path: "tx.write", CPUNS: 100,
			Categories: []report.Category{{Category: "copy.tx", CPUNS: 60, CI95NS: 6}, {Category: "tcp.tx", CPUNS: 40, CI95NS: 8, Exact: true}},
			Functions:  []report.Function{{Function: "tcp_sendmsg_locked", Calls: 10, NS: 90}}}},
		{{Path: "tx.write", CPUNS: 120,
			Categories: []report.Category{{Category: "copy.tx", CPUNS: 80, CI95NS: 8}, {Category: "tcp.tx", CPUNS: 40, CI95NS: 6, Exact: true}, {Category: "sched", CPUNS: 10, Exact: true}},
			Functions:  []report.Function{{Function: "tcp_sendmsg_locked", Calls: 30, NS: 110}, {Function: "skb_copy_ubufs", Calls: 2, NS: 8}}}},
	}
	got := meanPaths(runs)[0]
	want := []report.Category{
		{Category: "copy.tx", CPUNS: 70, CI95NS: 5}, // sqrt(36+64)/2
		{Category: "tcp.tx", CPUNS: 40, CI95NS: 5, Exact: true},
		{Category: "sched", CPUNS: 5, Exact: true},
	}
	if len(got.Categories) != len(want) {
		t.Fatalf("categories %+v", got.Categories)
	}
	for i := range want {
		if got.Categories[i] != want[i] {
			t.Errorf("category %d = %+v, want %+v", i, got.Categories[i], want[i])
		}
	}
	if len(got.Functions) != 2 || got.Functions[0].Function != "tcp_sendmsg_locked" || got.Functions[0].Calls != 20 ||
		got.Functions[0].NS != 100 || got.Functions[0].NSPerCall != 5 || got.Functions[1].Calls != 1 || got.Functions[1].NS != 4 {
		t.Errorf("functions %+v", got.Functions)
	}
}

// Before 6.3 the byte-class programs see no io_uring send: the workload's
// completions fill in pinned and deferred-copied bytes, said as such.
func TestIOUringFactsWithoutSendLength(t *testing.T) {
	c := report.Cell{Method: "io_uring_zc", RxMethod: "read", Topology: "loopback",
		Sender:   report.Process{Zerocopy: &report.Zerocopy{Source: report.ZerocopySourceKernel}},
		Receiver: report.Process{Zerocopy: &report.Zerocopy{}},
		Workload: &report.Workload{SentBytes: 4 << 20, ReceivedBytes: 4 << 20, ZCCompletions: 64, ZCCopied: 64}}
	applyFacts(&c)
	zc := c.Sender.Zerocopy
	if zc.Source != report.ZerocopySourceRequest || zc.TxPinnedBytes != 4<<20 || zc.TxDeferredCopyBytes != 4<<20 ||
		!strings.Contains(zc.Reason, "no sock_send_length") {
		t.Errorf("sender zero-copy %+v", zc)
	}
}
