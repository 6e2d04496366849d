package report

import (
	"bytes"
	"encoding/csv"
	"testing"
)

func TestCSVOneRowPerEntryAndPath(t *testing.T) {
	d := sample()
	d.Processes[0].Paths[0].Categories = []Category{{Category: "copy.tx", CPUNS: 4e8, CI95NS: 1e7}}
	d.Processes[0].Paths[0].Zerocopy = &Zerocopy{TxCopiedBytes: 64 << 20, Verdict: "copy"}
	rows, col := csvRows(t, d)
	if len(rows) != 3 {
		t.Fatalf("got %d rows, want header + 2 paths", len(rows))
	}
	r := rows[1]
	for name, want := range map[string]string{
		"command": "profile", "pid": "42", "comm": "iperf3", "path": "tx.write", "calls": "1000",
		"bytes": "67108864", "cpu_ns": "600000000", "entry_on_cpu_ns": "1200000000",
		"cat_copy.tx_ns": "400000000", "cat_copy.tx_ci95_ns": "10000000", "cat_tcp.tx_ns": "",
		"tx_copied_bytes": "67108864", "verdict": "copy", "method": "", "side": "",
	} {
		if got := r[col[name]]; got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if got := rows[2][col["tx_copied_bytes"]]; got != "" {
		t.Errorf("softirq row tx_copied_bytes = %q, want empty", got)
	}
}

func TestCSVRunCellsHaveBothSides(t *testing.T) {
	p := sample().Processes[0]
	d := &Document{Schema: Schema, Command: "run", Cells: []Cell{{
		Method: "write", RxMethod: "read", Size: 65536, Streams: 1, Repeats: 3, ThroughputBps: 1e10,
		Sender: p, Receiver: p, SenderNSPerMiB: 123.5, ReceiverNSPerMiB: 99,
	}}}
	rows, col := csvRows(t, d)
	if len(rows) != 5 {
		t.Fatalf("got %d rows, want header + 2 sides x 2 paths", len(rows))
	}
	for i, want := range []string{"sender", "sender", "receiver", "receiver"} {
		r := rows[i+1]
		if r[col["side"]] != want || r[col["method"]] != "write" || r[col["throughput_bps"]] != "10000000000" || r[col["repeats"]] != "3" {
			t.Errorf("row %d: side %q method %q throughput %q repeats %q", i+1, r[col["side"]], r[col["method"]], r[col["throughput_bps"]], r[col["repeats"]])
		}
	}
	if got := rows[1][col["entry_ns_per_mib"]]; got != "123.5" {
		t.Errorf("sender entry_ns_per_mib = %q", got)
	}
}

// csvRows renders d as CSV and parses it back: the rows (header first) and
// the column of each header name.
func csvRows(t *testing.T, d *Document) ([][]string, map[string]int) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteCSV(&buf, d); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("parse CSV: %v (%d rows)", err, len(rows))
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	return rows, col
}

// A two-host run: each side's rows name the host that measured it, the
// topology is on every row, and the table says which host ran each side.
func TestTwoHostSidesNameTheirHosts(t *testing.T) {
	p := sample().Processes[0]
	side := func(name, kernel string, share float64) Process {
		q := p
		q.Host = &SideHost{Host: Host{Hostname: name, Kernel: kernel, CPUs: 4},
			Backends: Backends{Accounting: "tp_btf", Attribution: "perf_event", SampleHz: 499}, Overhead: Overhead{Share: share}}
		return q
	}
	d := &Document{Schema: Schema, Command: "run", Host: Host{Hostname: "here", Kernel: "6.18.0"}, Cells: []Cell{{
		Method: "msg_zerocopy", RxMethod: "read", Size: 65536, Streams: 1, Topology: "remote",
		Sender: side("lab1", "6.12.1", 0.031), Receiver: side("lab2", "6.1.0", 0.02),
	}}}
	rows, col := csvRows(t, d)
	for i, want := range []string{"lab1", "lab1", "lab2", "lab2"} {
		if r := rows[i+1]; r[col["host"]] != want || r[col["topology"]] != "remote" {
			t.Errorf("row %d (%s): host %q topology %q, want %s, remote", i+1, r[col["side"]], r[col["host"]], r[col["topology"]], want)
		}
	}
	if k := rows[3][col["kernel"]]; k != "6.1.0" {
		t.Errorf("receiver's kernel %q, want its host's 6.1.0", k)
	}
	var table bytes.Buffer
	if err := WriteRunTable(&table, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"sender on lab1: kernel 6.12.1, 4 CPUs; accounting: tp_btf (exact)  attribution: perf_event at 499 Hz; zcprof's handlers 3.10% of its CPU there\n",
		"receiver on lab2: kernel 6.1.0, 4 CPUs; accounting: tp_btf (exact)  attribution: perf_event at 499 Hz; zcprof's handlers 2.00% of its CPU there\n",
	} {
		if !bytes.Contains(table.Bytes(), []byte(want)) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	// One host: no such lines, and the profile rows name this host.
	d.Cells[0].Sender.Host, d.Cells[0].Receiver.Host = nil, nil
	table.Reset()
	if err := WriteRunTable(&table, d); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(table.Bytes(), []byte(" on lab")) || len(SideHosts(d)) != 0 {
		t.Errorf("a one-host run names side hosts:\n%s", table.String())
	}
	rows, col = csvRows(t, d)
	if h := rows[1][col["host"]]; h != "here" {
		t.Errorf("one-host row host %q, want here", h)
	}
}
