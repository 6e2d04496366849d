package profiler

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/zcprof/zcprof/profiler/metrics"
	"github.com/zcprof/zcprof/profiler/testenv"
)

// soakEnv sets how long BenchmarkSoak runs (a Go duration); make soak
// passes SOAK (default 1h), make bench leaves the default.
const soakEnv = "ZCPROF_SOAK"

// BenchmarkSoak profiles every task (profile -a, one reading a second, as
// --metrics takes them) while ~100 short processes a second are spawned;
// three quarters in, a busy process runs 1.5 s. It is counted against its
// own CPU clock (2%) in the whole-run report and in the Prometheus
// counters the readings feed (as profile --metrics does), and the run's
// peak RSS (VmHWM) and the time to build the whole-run report are
// reported.
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
	sess, err := Open(Options{Target: Target{All: true}})
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	start, err := sess.Snapshot()
	if err != nil {
		b.Fatal(err)
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
	// The exporter's cap on process names is raised past what -a meets in
	// an hour (kernel threads' names vary), so the late process keeps its
	// own series; through a link of its own name it has a comm of its own.
	exp := metrics.New(4096)
	dir := b.TempDir()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	link := filepath.Join(dir, lateComm)
	if err := os.Symlink(self, link); err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(dir, "busy.json")
	busy := exec.Command(link, "-test.run=^$")
	busy.Env = append(os.Environ(), busyEnv+"="+out, "ZCPROF_TEST_SECONDS=1.5")
	busy.Stderr = os.Stderr
	late := time.After(dur * 3 / 4)
	end := time.After(dur)
	readings := time.NewTicker(time.Second)
	defer readings.Stop()
	prev := start
loop:
	for {
		select {
		case <-late:
			if err := busy.Start(); err != nil {
				b.Fatal(err)
			}
			go busy.Wait()
		case <-end:
			break loop
		case <-readings.C:
			cur, err := sess.Snapshot()
			if err != nil {
				b.Fatal(err)
			}
			exp.Add(sess.profileDocument(Delta(prev, cur), false))
			prev = cur
		}
	}
	close(stop)
	n := <-spawned
	for i := 0; i < 50; i++ { // the busy child's result, if it is still writing it
		if _, err := os.Stat(out); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t0 := time.Now()
	last, err := sess.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	d := sess.profileDocument(Delta(start, last), false)
	build := time.Since(t0)
	exp.Add(sess.profileDocument(Delta(prev, last), false))
	exported := exportedCPUNS(b, exp, lateComm)

	var bc busyCounts
	raw, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(raw, &bc); err != nil {
		b.Fatal(err)
	}
	measured := uint64(0)
	found := false
	// By pid and name: the pid was another process's earlier in the run
	// (pids wrap every five or six minutes at this rate), an entry of its own.
	for _, p := range d.Processes {
		if p.PID == bc.PID && p.Comm == lateComm {
			if found {
				b.Errorf("the late busy process %d is in the report twice", bc.PID)
			}
			measured, found = uint64(int64(p.CPU.RanNS())+p.CPU.SchedstatBoundaryNS), true
		}
	}
	hwm := vmHWMKiB(b)
	b.ReportMetric(float64(n), "spawned")
	b.ReportMetric(float64(len(d.Processes)), "processes")
	b.ReportMetric(float64(hwm)/1024, "peak-RSS-MiB")
	b.ReportMetric(build.Seconds(), "report-s")
	b.ReportMetric(float64(measured)/1e6, "late-ms")
	b.ReportMetric(float64(exported)/1e6, "late-metrics-ms")
	b.ReportMetric(float64(bc.CPUNS)/1e6, "late-own-clock-ms")
	b.Logf("%v: %d processes spawned, %d in the report; peak RSS %d MiB; whole-run report built in %v; late process %d: %d ns measured, %d ns in /metrics, %d ns its own clock; warnings %q",
		dur, n, len(d.Processes), hwm/1024, build, bc.PID, measured, exported, bc.CPUNS, d.Warnings)
	if !found {
		b.Fatalf("the late busy process %d is not in the report", bc.PID)
	}
	if float64(measured) < 0.98*float64(bc.CPUNS) || float64(measured) > 1.02*float64(bc.CPUNS) {
		b.Errorf("late busy process: %d ns measured vs %d ns of its own clock (2%%)", measured, bc.CPUNS)
	}
	if float64(exported) < 0.98*float64(bc.CPUNS) || float64(exported) > 1.02*float64(bc.CPUNS) {
		b.Errorf("late busy process: %d ns in zcprof_cpu_seconds_total vs %d ns of its own clock (2%%)", exported, bc.CPUNS)
	}
	if d.Overhead.MapFull != nil {
		b.Errorf("maps were full: %v", d.Overhead.MapFull)
	}
}

// lateComm is the late busy process's name (its comm, the metrics'
// process label).
const lateComm = "soak-late"

// exportedCPUNS sums zcprof_cpu_seconds_total over the paths and contexts
// of one process label.
func exportedCPUNS(tb testing.TB, exp *metrics.Exporter, process string) uint64 {
	families, err := exp.Registry().Gather()
	if err != nil {
		tb.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != "zcprof_cpu_seconds_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "process") == process {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return uint64(sum * 1e9)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// vmHWMKiB is this process's peak resident set.
func vmHWMKiB(tb testing.TB) uint64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			v, _ := strconv.ParseUint(f[1], 10, 64)
			return v
		}
	}
	tb.Fatal("no VmHWM in /proc/self/status")
	return 0
}
