package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// metricLines is one scrape of url, a line per series.
func metricLines(url string) ([]string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return strings.Split(string(b), "\n"), err
}

// scrape returns the value of the series whose line starts with prefix
// (name{labels}), 0 if absent.
func scrape(t *testing.T, url, series string) (float64, bool) {
	t.Helper()
	lines, err := metricLines(url)
	if err != nil {
		return 0, false
	}
	for _, line := range lines {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			return v, err == nil
		}
	}
	return 0, true
}

// scrapeSum sums the series of a metric whose labels contain match.
func scrapeSum(tb testing.TB, url, metric, match string) float64 {
	tb.Helper()
	lines, err := metricLines(url)
	if err != nil {
		tb.Fatalf("scrape %s: %v", url, err)
	}
	sum := 0.0
	for _, line := range lines {
		if !strings.HasPrefix(line, metric+"{") || !strings.Contains(line, match) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			tb.Fatalf("%s: %q", url, line)
		}
		sum += v
	}
	return sum
}

// TestMetricsMoveWithATransfer: `profile --comm X --metrics` serves
// counters that grow by the bytes of a known transfer run by a process
// named X (a copy of zcprof doing `run`), and a second exporter on the
// same address fails in one line.
func TestMetricsMoveWithATransfer(t *testing.T) {
	requireBPF(t)
	dir := t.TempDir()
	xfer := filepath.Join(dir, "zcxfer")
	b, err := os.ReadFile(zcprofBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(xfer, b, 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	url := "http://" + addr + "/metrics"

	prof := exec.Command(zcprofBin, "profile", "--comm", "zcxfer", "--metrics", addr)
	var stderr bytes.Buffer
	prof.Stderr = &stderr
	if err := prof.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		prof.Process.Signal(syscall.SIGINT)
		prof.Wait()
	}()
	// Bounded wait for the first interval: the exporter answers as soon
	// as it is bound, the programs are attached only a moment later.
	up := false
	for i := 0; i < 300 && !up; i++ {
		n, ok := scrape(t, url, "zcprof_intervals_total")
		up = ok && n >= 1
		time.Sleep(100 * time.Millisecond)
	}
	if !up {
		t.Fatalf("no metrics at %s: %s", url, stderr.String())
	}

	busy := run(t, exec.Command(zcprofBin, "profile", "-a", "--metrics", addr))
	if busy.code == 0 || strings.Count(strings.TrimSpace(busy.stderr), "\n") != 0 || !strings.Contains(busy.stderr, "address already in use") {
		t.Errorf("second exporter: exit %d, %q", busy.code, busy.stderr)
	}

	const n = 32 << 20
	if r := run(t, exec.Command(xfer, "run", "--method", "write", "--bytes", "32M", "-q")); r.code != 0 {
		t.Fatalf("transfer: exit %d: %s", r.code, r.stderr)
	}
	// The counters grow once per interval (1 s): wait, bounded, for the
	// transfer to show.
	var tx, rx, cpu float64
	for i := 0; i < 50; i++ {
		tx, _ = scrape(t, url, `zcprof_syscall_bytes_total{path="tx.write",process="zcxfer"}`)
		rx, _ = scrape(t, url, `zcprof_syscall_bytes_total{path="rx.read",process="zcxfer"}`)
		if tx >= n && rx >= n {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	cpu, _ = scrape(t, url, `zcprof_cpu_seconds_total{context="syscall",path="tx.write",process="zcxfer"}`)
	copied, _ := scrape(t, url, `zcprof_bytes_total{class="copied",path="tx.write",process="zcxfer"}`)
	if tx < n || rx < n || cpu <= 0 {
		t.Errorf("after a %d-byte write transfer: tx.write %v bytes, rx.read %v bytes, tx.write %v s", n, tx, rx, cpu)
	}
	if copied < n {
		t.Errorf("copied bytes of tx.write = %v, want at least %d", copied, n)
	}
	t.Logf("tx.write %v B (%v copied), rx.read %v B, tx.write CPU %.4f s", tx, copied, rx, cpu)
}

// A full map is said on stderr at once, sorted by map, naming the counter.
func TestWarnMapFull(t *testing.T) {
	var b strings.Builder
	warnMapFull(&b, map[string]uint64{"threads": 2, "stats": 14840})
	want := "zcprof: warning: the BPF map stats was full: 14840 updates dropped since the last reading (with --metrics: zcprof_map_full_total)\n" +
		"zcprof: warning: the BPF map threads was full: 2 updates dropped since the last reading (with --metrics: zcprof_map_full_total)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
