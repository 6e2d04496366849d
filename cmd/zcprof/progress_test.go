package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/report"
	zrun "github.com/zcprof/zcprof/workload/run"
)

// Off a terminal: one line per finished cell, no bar; --quiet: nothing.
func TestProgressOffTerminal(t *testing.T) {
	var buf bytes.Buffer
	var o zrun.Options
	runProgress(&buf, &o, false)()
	if o.OnRun != nil || o.OnCell == nil {
		t.Fatal("a pipe gets cell lines, not a bar")
	}
	o.OnCell(0, 2, report.Cell{Method: "write", RxMethod: "read", Size: 65536, Streams: 1, ThroughputBps: 1e10})
	if got := buf.String(); got != "cell 1/2 write→read 64K ×1: 10.00 Gbit/s\n" {
		t.Errorf("got %q", got)
	}
	var q zrun.Options
	runProgress(&buf, &q, true)()
	if q.OnRun != nil || q.OnCell != nil {
		t.Error("--quiet still reports progress")
	}
}

// On a terminal (script(1) gives the run a pty): a bar with the cell, the
// run and the ETA.
func TestProgressBarOnTerminal(t *testing.T) {
	requireBPF(t)
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) not installed")
	}
	log := filepath.Join(t.TempDir(), "tty")
	cmd := exec.Command("script", "-qec", zcprofBin+" run --method write --bytes 8M --repeat 2 >/dev/null", log)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	b, _ := os.ReadFile(log)
	s := string(b)
	for _, want := range []string{"cell 1/1, run 2/2", "(1/2)", "cell 1/1 write→read 64K ×1:"} {
		if !strings.Contains(s, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, s)
		}
	}
}
