package html

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/compare"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/report/html/htmltest"
)

func runDoc() *report.Document {
	side := func(ns uint64) report.Process {
		return report.Process{Comm: "zcprof", CPU: report.CPU{OnCPUNS: ns, UserNS: ns / 10, KernelNS: ns / 2, SoftirqNS: ns * 4 / 10,
			SchedstatNS: ns, TimesUserNS: ns / 20, TimesSystemNS: ns * 19 / 20},
			Paths: []report.Path{
				{Path: "user", CPUNS: ns / 10},
				{Path: "tx.write", CPUNS: ns / 2, Categories: []report.Category{{Category: "copy.tx", CPUNS: ns / 4}, {Category: "tcp.tx", CPUNS: ns / 4}}},
				{Path: "softirq.net_rx", CPUNS: ns * 4 / 10},
			}}
	}
	return &report.Document{Schema: report.Schema, Command: "run", Host: report.Host{Kernel: "6.18 <test>", CPUs: 2},
		Backends: report.Backends{Accounting: "tp_btf", Attribution: "sampling"},
		Cells: []report.Cell{
			{Method: "write", RxMethod: "read", Size: 65536, Streams: 1, ThroughputBps: 2e10, Sender: onHost(side(2e7), "lab1"), Receiver: onHost(side(1e7), "lab2"),
				SenderNSPerMiB: 3e5, ReceiverNSPerMiB: 2e5, Verdicts: []string{"write: every byte is copied </script><b>"}},
			{Method: "sendfile", RxMethod: "read", Size: 65536, Streams: 1, ThroughputBps: 2.5e10, Sender: side(1.5e7), Receiver: side(1e7),
				SenderNSPerMiB: 2e5, ReceiverNSPerMiB: 2e5},
		}}
}

// onHost makes p a side measured on another host (a two-host run).
func onHost(p report.Process, host string) report.Process {
	p.Host = &report.SideHost{Host: report.Host{Hostname: host, Kernel: "6.12.1", CPUs: 4}, Backends: report.Backends{Accounting: "tp_btf"}}
	return p
}

// The page is self-contained (no network reference), its data cannot end
// its script element, and it draws every chart in Chromium without error.
func TestRunReportDrawsEveryChart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(f, runDoc()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, _ := os.ReadFile(path)
	page := string(b)
	for _, bad := range []string{"<script src", "<link ", "https://cdn", "</script><b>"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	for _, host := range []string{"sender on lab1: kernel 6.12.1", "receiver on lab2: kernel 6.12.1"} {
		if !strings.Contains(page, host) {
			t.Errorf("page lacks the side's host %q", host)
		}
	}
	st := htmltest.Check(t, path, 5)
	ids := map[string]bool{}
	for _, c := range st.Charts {
		ids[c.ID] = true
	}
	for _, id := range []string{"cpu-by-path", "cpu-by-category", "throughput", "service-demand", "exact-vs-times"} {
		if !ids[id] {
			t.Errorf("chart %s missing", id)
		}
	}
}

func TestCompareReportDrawsEveryChart(t *testing.T) {
	d := 12.5
	r := &compare.Result{Schema: compare.Schema, Test: compare.TestName, Alpha: 0.05, Comparisons: []compare.Comparison{{
		Base: "a.json", New: "b.json", Pairs: []compare.Pair{{Base: "write", New: "write", Rows: []compare.Row{
			{Figure: "throughput_bps", Label: "throughput", Unit: "bps", Base: compare.Summary{Present: true, N: 5, Mean: 1e10},
				New: compare.Summary{Present: true, N: 5, Mean: 1.125e10}, DeltaPct: &d, Testable: true, P: 0.01, Significant: true},
		}}}}}}
	path := filepath.Join(t.TempDir(), "cmp.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCompare(f, r); err != nil {
		t.Fatal(err)
	}
	f.Close()
	htmltest.Check(t, path, 1)
}
