package profiler

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/testenv"
)

// A syscall loop is where zcprof's own cost is largest relative to the
// work: two handler runs per getppid(), which does nearly nothing. Their
// time must be zcprof's own (cpu.probe_ns), never the target's user or
// path time.

const getppidEnv = "ZCPROF_TEST_GETPPID"

// getppidCalls: the program made 2,000,000; three times that keeps
// the profiled child above the self-check's 1 s minimum interval on a
// quiet machine too (2,000,000 profiled took 0.6-0.9 s here, so every
// thread went unchecked and the precision assertion below failed).
const getppidCalls = 6_000_000

type getppidCounts struct {
	Calls uint64
	CPUNS uint64 // CLOCK_PROCESS_CPUTIME_ID at the end: the whole process
}

// runGetppidChild makes getppidCalls getppid() calls on one locked thread
// and writes its process CPU time.
func runGetppidChild(out string) error {
	runtime.LockOSThread()
	var c getppidCounts
	for i := 0; i < getppidCalls; i++ {
		unix.Getppid()
		c.Calls++
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return err
	}
	c.CPUNS = uint64(ts.Nano())
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o600)
}

// getppidUnprofiled runs the child with nothing attached and returns its
// whole CPU time.
func getppidUnprofiled(t *testing.T) uint64 {
	t.Helper()
	out := filepath.Join(t.TempDir(), "counts.json")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), getppidEnv+"="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("unprofiled child: %v: %s", err, b)
	}
	var c getppidCounts
	b, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c.CPUNS
}

// TestSyscallLoopProbeTimeIsOwn: with exact accounting only (byte classes
// off: their classic syscall tracepoints make the kernel run its per-event
// syscall dispatch, perf_syscall_enter/exit, on every syscall of every
// task, outside any handler zcprof can time; 6,000,000 getppid() calls put
// about 120 ms of it in the child's user time here, docs/overhead.md), the
// child's reported user time is at most
// its whole CPU time without zcprof (the mean of a run before and one
// after, in this test) plus 10% of it for run-to-run noise on a shared
// machine; zcprof's handler time is shown beside it, at least one handler
// run counted per syscall entry and exit, and the precision check still holds
// (on_cpu_ns + probe_ns is what schedstat billed).
func TestSyscallLoopProbeTimeIsOwn(t *testing.T) {
	requireBPF(t)
	// The child, zcprof and the calibration share one CPU, as the
	// benchmarks pin their workload. In the vmtest guests this matters
	// most: qemu (thread=single) runs both vCPUs on one host thread in
	// turn, and the guest's clocks follow the host's, so a thread's CPU
	// time grows while the other vCPU runs: zcprof's own work on the
	// other CPU would inflate the child's figures, which the calibration,
	// made with that CPU idle, cannot foresee.
	pinProcess(t, 0)
	// Calibrated now, as `zcprof profile` calibrates at its start, not by
	// whichever earlier test of this binary opened the first session:
	// under emulation the dispatch cost drifts over minutes (a 6.1 guest
	// calibrated 522 ns per run early, and the child's user time came out
	// 0.8 s, 67 ns per run, above its whole unprofiled CPU).
	resetCalibration()
	before := getppidUnprofiled(t)

	out := filepath.Join(t.TempDir(), "counts.json")
	t.Setenv(getppidEnv, out)
	var c getppidCounts
	res := profileSelf(t, ProfileOptions{ByteClasses: byteclass.Off}, out, &c)
	assertDetached(t, res.Document.Backends.ProgramIDs)
	os.Unsetenv(getppidEnv)
	after := getppidUnprofiled(t)

	if c.Calls != getppidCalls {
		t.Fatalf("child made %d calls, want %d", c.Calls, getppidCalls)
	}
	if len(res.Document.Processes) == 0 {
		t.Fatal("no process in the report")
	}
	p := res.Document.Processes[0]
	cpu := p.CPU
	base := (before + after) / 2
	bound := base / 10
	t.Logf("without zcprof: %s and %s; with: user %s, kernel %s, probe %s over %d runs (dispatch %d ns/run), schedstat %s, times() user %s system %s",
		report.Duration(int64(before)), report.Duration(int64(after)), report.Duration(int64(cpu.UserNS)), report.Duration(int64(cpu.KernelNS)), report.Duration(int64(cpu.ProbeNS)), cpu.ProbeEvents,
		res.Document.Overhead.DispatchNS, report.Duration(int64(cpu.SchedstatNS)), report.Duration(int64(cpu.TimesUserNS)), report.Duration(int64(cpu.TimesSystemNS)))
	if why, failed := res.Document.Backends.Unavailable["dispatch calibration"]; failed {
		t.Errorf("the dispatch calibration failed (%s): the handlers' untimed part is left in the child's figures", why)
	}
	switch {
	case testenv.InVM():
		// Under qemu's single-threaded TCG a guest's CPU clocks follow the
		// host's: identical unprofiled runs of this loop took 4.2-12.2 s in
		// one guest, so a bound of 10% is below the noise there
		// (known-issues.md). The comparison is logged above; the
		// assertions below still hold in the guests.
	case cpu.UserNS > base+bound:
		t.Errorf("user time %s is more than the child's whole CPU time without zcprof (%s) + %s: zcprof's cost is in it",
			report.Duration(int64(cpu.UserNS)), report.Duration(int64(base)), report.Duration(int64(bound)))
	}
	if cpu.ProbeNS == 0 || cpu.ProbeEvents < 2*getppidCalls {
		t.Errorf("probe time %s over %d handler runs: want > 0 over at least %d (every sys_enter and sys_exit)",
			report.Duration(int64(cpu.ProbeNS)), cpu.ProbeEvents, 2*getppidCalls)
	}
	o := res.Document.Overhead
	if o.BPFNS != cpu.ProbeNS || o.Events != cpu.ProbeEvents {
		t.Errorf("overhead %d ns over %d runs, want the process's probe figures %d ns over %d", o.BPFNS, o.Events, cpu.ProbeNS, cpu.ProbeEvents)
	}
	if testenv.InVM() {
		// Under software emulation the document's native bounds do not
		// hold (known-issues.md, "The clock jumps under a waiting vCPU"):
		// what the threads ran against schedstat, with the guests' slack.
		if diff, bound := SchedstatResidual(cpu); diff > bound+testenv.PrecisionSlack(cpu.SchedstatNS) {
			t.Errorf("ran %s (boundary %d ns) against schedstat %s", report.Duration(int64(cpu.RanNS())), cpu.SchedstatBoundaryNS, report.Duration(int64(cpu.SchedstatNS)))
		}
	} else if d := res.Document.Precision; d == nil || d.Checked == 0 || d.Failed != 0 {
		t.Errorf("precision self-check: %+v, warnings %q", d, res.Document.Warnings)
	}
}
