package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/testenv"
)

// soakEnv sets how long BenchmarkSoak runs (a Go duration); make soak
// passes SOAK (default 1h), make bench leaves the default.
const soakEnv = "ZCPROF_SOAK"

// BenchmarkSoak is `zcprof profile -a --metrics ADDR --json -o FILE` as a
// user runs it, while ~100 short processes a second are spawned; three
// quarters in, a busy process runs 1.5 s. It must be counted within 2% of
// its own CPU clock in the final report and in /metrics (scraped over
// HTTP, the process label cap raised past what -a meets in an hour), and
// no map may fill. Reported: zcprof's peak RSS, and the time from Ctrl-C
// to its exit (the final reading, the whole-run report and the teardown).
func BenchmarkSoak(b *testing.B) {
	testenv.RequireBPF(b)
	dur := 2 * time.Minute
	if v := os.Getenv(soakEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("%s=%q: %v", soakEnv, v, err)
		}
		dur = d
	}
	for i := 0; i < b.N; i++ {
		soak(b, dur)
	}
}

func soak(b *testing.B, dur time.Duration) {
	dir := b.TempDir()
	out := filepath.Join(dir, "report.json")
	prof := exec.Command(zcprofBin, "profile", "-a", "--metrics", "127.0.0.1:0", "--metrics-max-processes", "4096", "--json", "-o", out)
	stderr := &testenv.SyncBuffer{}
	prof.Stderr = stderr
	if err := prof.Start(); err != nil {
		b.Fatal(err)
	}
	defer prof.Process.Kill()
	url := ""
	bound := regexp.MustCompile(`metrics on (http://\S+/metrics)`)
	for deadline := time.Now().Add(30 * time.Second); url == ""; time.Sleep(100 * time.Millisecond) {
		if m := bound.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		} else if time.Now().After(deadline) {
			b.Fatalf("zcprof did not say where it serves metrics: %q", stderr.String())
		}
	}

	stop := make(chan struct{})
	spawned := make(chan int)
	go func() {
		n := 0
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				spawned <- n
				return
			case <-tick.C:
				if exec.Command("/bin/true").Run() == nil {
					n++
				}
			}
		}
	}()
	time.Sleep(dur * 3 / 4)
	// Through a link of its own name the busy process has a comm, and a
	// process label, of its own.
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	link := filepath.Join(dir, lateComm)
	if err := os.Symlink(self, link); err != nil {
		b.Fatal(err)
	}
	result := filepath.Join(dir, "busy.json")
	busy := exec.Command(link)
	busy.Env = append(os.Environ(), busyEnv+"="+result)
	busy.Stderr = os.Stderr
	if err := busy.Run(); err != nil {
		b.Fatalf("the late busy process: %v", err)
	}
	time.Sleep(dur / 4)
	close(stop)
	n := <-spawned

	// What the process ran: its own time and zcprof's handlers in it.
	exported := scrapeSum(b, url, "zcprof_cpu_seconds_total", `process="`+lateComm+`"`) +
		scrapeSum(b, url, "zcprof_probe_seconds_total", `process="`+lateComm+`"`)
	at := time.Now()
	prof.Process.Signal(syscall.SIGINT)
	if err := prof.Wait(); err != nil {
		b.Fatalf("zcprof profile -a: %v: %s", err, stderr.String())
	}
	exit := time.Since(at)
	hwm := prof.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB

	var d report.Document
	raw, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		b.Fatalf("%s: %v", out, err)
	}
	var own busyResult
	if raw, err = os.ReadFile(result); err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(raw, &own); err != nil {
		b.Fatal(err)
	}
	measured, found := uint64(0), false
	// By pid and name: the pid was another process's earlier in the run
	// (pids wrap every five or six minutes at this rate), an entry of its own.
	for _, p := range d.Processes {
		if p.PID == own.PID && p.Comm == lateComm {
			if found {
				b.Errorf("the late busy process %d is in the report twice", own.PID)
			}
			measured, found = uint64(int64(p.CPU.RanNS())+p.CPU.SchedstatBoundaryNS), true
		}
	}
	b.ReportMetric(float64(n), "spawned")
	b.ReportMetric(float64(len(d.Processes)), "processes")
	b.ReportMetric(float64(hwm)/1024, "peak-RSS-MiB")
	b.ReportMetric(exit.Seconds(), "exit-s")
	b.ReportMetric(float64(measured)/1e6, "late-ms")
	b.ReportMetric(exported*1e3, "late-metrics-ms")
	b.ReportMetric(float64(own.CPUNS)/1e6, "late-own-clock-ms")
	b.Logf("%v: %d processes spawned, %d in the report; zcprof's peak RSS %d MiB; Ctrl-C to exit (final report written) %v; late process %d: %d ns measured, %.0f ns in /metrics, %d ns its own clock; warnings %q",
		dur, n, len(d.Processes), hwm/1024, exit, own.PID, measured, exported*1e9, own.CPUNS, d.Warnings)
	if !found {
		b.Fatalf("the late busy process %d is not in the report", own.PID)
	}
	if float64(measured) < 0.98*float64(own.CPUNS) || float64(measured) > 1.02*float64(own.CPUNS) {
		b.Errorf("late busy process: %d ns measured vs %d ns of its own clock (2%%)", measured, own.CPUNS)
	}
	if e := exported * 1e9; e < 0.98*float64(own.CPUNS) || e > 1.02*float64(own.CPUNS) {
		b.Errorf("late busy process: %.0f ns in zcprof_cpu_seconds_total and zcprof_probe_seconds_total vs %d ns of its own clock (2%%)", e, own.CPUNS)
	}
	if d.Overhead.MapFull != nil || strings.Contains(stderr.String(), "was full") {
		b.Errorf("maps were full: %v; %s", d.Overhead.MapFull, stderr.String())
	}
}

// lateComm is the late busy process's name (its comm, its process label).
const lateComm = "soak-late"

// busyEnv makes this test binary, started with it, burn 1.5 s of CPU in
// user space and write its pid and its own CPU clock to the file it names.
const busyEnv = "ZCPROF_TEST_BUSY"

// busySink keeps the busy loop's result, so that no compiler drops it.
var busySink uint64

type busyResult struct {
	PID   int
	CPUNS uint64
}

// runBusy is the busy process, when the test binary was started as one:
// it does not return.
func runBusy() {
	out := os.Getenv(busyEnv)
	if out == "" {
		return
	}
	var ts unix.Timespec
	x := uint64(1)
	for start := time.Now(); time.Since(start) < 1500*time.Millisecond; {
		for i := 0; i < 1e5; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts)
	busySink = x
	raw, _ := json.Marshal(busyResult{PID: os.Getpid(), CPUNS: uint64(ts.Nano())})
	if err := os.WriteFile(out, raw, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(0)
}
