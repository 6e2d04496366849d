package main

import (
	"encoding/csv"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/report"
)

// TestRunCSV: --csv of a real cell agrees with --json's figures' shape:
// header as documented, one row per side and path, each side's path
// cpu_ns adding up to its on-CPU time.
func TestRunCSV(t *testing.T) {
	requireBPF(t)
	r := run(t, exec.Command(zcprofBin, "run", "--method", "write", "--bytes", "8M", "--csv", "-q"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	rows, err := csv.NewReader(strings.NewReader(r.stdout)).ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v\n%s", err, r.stdout)
	}
	if strings.Join(rows[0], ",") != strings.Join(report.CSVColumns(), ",") {
		t.Fatalf("header %v", rows[0])
	}
	col := map[string]int{}
	for i, n := range rows[0] {
		col[n] = i
	}
	sum := map[string]uint64{}
	onCPU := map[string]uint64{}
	var txBytes uint64
	for _, row := range rows[1:] {
		side := row[col["side"]]
		ns, _ := strconv.ParseUint(row[col["cpu_ns"]], 10, 64)
		sum[side] += ns
		onCPU[side], _ = strconv.ParseUint(row[col["entry_on_cpu_ns"]], 10, 64)
		if side == "sender" && row[col["path"]] == "tx.write" {
			txBytes, _ = strconv.ParseUint(row[col["bytes"]], 10, 64)
		}
		if row[col["method"]] != "write" || row[col["command"]] != "run" {
			t.Errorf("row %v", row)
		}
	}
	if txBytes != 8<<20 {
		t.Errorf("sender tx.write bytes = %d, want %d", txBytes, 8<<20)
	}
	for _, side := range []string{"sender", "receiver"} {
		if onCPU[side] == 0 || sum[side] != onCPU[side] {
			t.Errorf("%s: paths add up to %d ns, entry on-CPU %d ns", side, sum[side], onCPU[side])
		}
	}
	if r := run(t, exec.Command(zcprofBin, "run", "--json", "--csv")); r.code == 0 || !strings.Contains(r.stderr, "either --json or --csv") {
		t.Errorf("--json --csv: exit %d, %q", r.code, r.stderr)
	}
}
