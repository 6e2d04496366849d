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
