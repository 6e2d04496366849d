package profiler_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/backends"
	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/procfs"
	"github.com/zcprof/zcprof/profiler/pseudofs"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/workload"
)

// BenchmarkProbeEffect measures what each tool costs the workload it
// watches, side by side in one run: a fixed 1 GiB loopback transfer (64 KiB
// writes, read receiver), sender and receiver pinned to one CPU
// (sched_setaffinity: unpinned pairs on 2 vCPUs range 0.6-1.9), figure =
// the workload threads' own sum_exec_runtime with the tool attached over
// without, benchPairs interleaved pairs per tool, median ratio. Tools:
//
//   - zcprof accounting only (--backend none --byte-classes off)
//   - zcprof default profile (byte classes auto, sampling attribution)
//   - the default without sampling, and without byte classes: where the
//     default's cost beyond the accounting goes
//   - floor: a trivial counting program on the accounting's hooks
//   - clock floor: the same plus one clock read per event, the least an
//     exact timer can do (on our PVM guests the read costs more than the
//     trivial program's whole run)
//   - perf record -a -g -F 999 (to a temporary file)
//   - bpftrace timing every syscall and softirq, naively
//
// Per-event cost: (CPU with - CPU without) / events in the workload's
// threads, for zcprof accounting (its timed handler runs) and both floors
// (their runs). No assertion: the figures are printed.
//
//	make bench   (or: go test -run '^$' -bench ProbeEffect -benchtime 1x ./profiler/)
func BenchmarkProbeEffect(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	// A pair's ratio varies by 5-8% here (how the pinned sender and
	// receiver take turns moves CPU per byte), so the median of nine
	// moved by 2-3% from one bench to the next: fifteen halve that.
	const benchPairs = 15
	cpu := 1 % numCPU()
	cfg := workload.Config{Method: "write", RxMethod: "read", Size: 64 << 10, Streams: 1, Bytes: 1 << 30,
		SenderCPU: cpu, ReceiverCPU: cpu}
	tools := []benchTool{
		{name: "zcprof accounting only", attach: zcprofAttach(byteclass.Off, kernel.None)},
		{name: "zcprof default profile", attach: zcprofAttach(kernel.Auto, kernel.Auto)},
		{name: "zcprof --backend none (+byte classes)", attach: zcprofAttach(kernel.Auto, kernel.None)},
		{name: "zcprof --byte-classes off (+sampling)", attach: zcprofAttach(byteclass.Off, kernel.Auto)},
		{name: "floor (trivial program, same hooks)", attach: floorAttach("floor_")},
		{name: "clock floor (floor + 1 clock read)", attach: floorAttach("clock_")},
		{name: "perf record -a -g -F 999", attach: perfAttach},
		{name: "bpftrace, every syscall and softirq", attach: bpftraceAttach},
	}
	if _, err := profiler.DispatchNS(kernel.TpBTF); err != nil {
		say("dispatch calibration: %v", err)
	}
	for i := 0; i < b.N*benchPairs; i++ {
		for t := range tools {
			base, _, err := benchRun(cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			with, r, err := benchRun(cfg, tools[t].attach)
			if err != nil {
				b.Fatalf("%s: %v", tools[t].name, err)
			}
			tools[t].add(base, with, r)
		}
	}
	say("workload: %d MiB over loopback in %d KiB writes, sender and receiver pinned to CPU %d; %d interleaved pairs per tool",
		cfg.Bytes>>20, cfg.Size>>10, cpu, benchPairs)
	say("%-38s %10s %8s %14s %12s", "tool", "ratio", "range", "ns/event", "reported")
	var acctPerEvent, floorPerEvent, clockPerEvent float64
	for i, t := range tools {
		ratio := median(t.ratios)
		lo, hi := minMax(t.ratios)
		perEvent, reported := "", ""
		if pe := t.perEvent(); pe > 0 {
			perEvent = fmt.Sprintf("%.0f", pe)
			switch i {
			case 0:
				acctPerEvent = pe
			case 4:
				floorPerEvent = pe
			case 5:
				clockPerEvent = pe
			}
		}
		if len(t.reported) > 0 {
			reported = fmt.Sprintf("%.1f%%", 100*median(t.reported))
		}
		say("%-38s x%9.3f %4.2f-%4.2f %14s %12s", t.name, ratio, lo, hi, perEvent, reported)
		b.ReportMetric(ratio, "ratio-"+metricName(t.name))
	}
	if floorPerEvent > 0 && clockPerEvent > 0 {
		say("zcprof accounting's cost per event: %.0f ns, %.2fx the floor's %.0f ns, %.2fx the clock floor's %.0f ns (dispatch calibrated at start: %d ns/run)",
			acctPerEvent, acctPerEvent/floorPerEvent, floorPerEvent, acctPerEvent/clockPerEvent, clockPerEvent, dispatchNS())
		b.ReportMetric(acctPerEvent/floorPerEvent, "zcprof-per-event/floor")
		b.ReportMetric(acctPerEvent/clockPerEvent, "zcprof-per-event/clock-floor")
	}
	say("targets: accounting only <= x1.05, default profile <= x1.10, zcprof per event <= 1.5x the floor (a clock read alone is more on PVM guests: the clock floor); \"reported\" is zcprof's own overhead.share, to compare with the ratio's excess")

	// Per-event cost, where events dominate: a thread making getppid()
	// calls (two events each), pinned to the same CPU. A transfer has too
	// few events for the per-event figure to stand out of the noise.
	loopTools := []benchTool{tools[0], tools[4], tools[5]}
	for i := range loopTools {
		loopTools[i].ratios, loopTools[i].excessNS, loopTools[i].events, loopTools[i].reported = nil, nil, nil, nil
	}
	for i := 0; i < b.N*benchPairs; i++ {
		for t := range loopTools {
			base, _, err := loopRun(cpu, nil)
			if err != nil {
				b.Fatal(err)
			}
			with, r, err := loopRun(cpu, loopTools[t].attach)
			if err != nil {
				b.Fatalf("%s: %v", loopTools[t].name, err)
			}
			loopTools[t].add(base, with, r)
		}
	}
	acct, floor, clock := loopTools[0].perEvent(), loopTools[1].perEvent(), loopTools[2].perEvent()
	say("syscall loop: %d getppid() calls on one thread pinned to CPU %d, %d interleaved pairs per tool", loopCalls, cpu, benchPairs)
	for _, t := range loopTools {
		lo, hi := minMax(t.ratios)
		say("%-38s x%9.3f %4.2f-%4.2f %14.0f %12s", t.name, median(t.ratios), lo, hi, t.perEvent(), fmtShare(t.reported))
	}
	if floor > 0 && clock > 0 {
		say("syscall loop: zcprof accounting's cost per event %.0f ns, %.2fx the floor's %.0f ns, %.2fx the clock floor's %.0f ns (one clock read: %.0f ns)",
			acct, acct/floor, floor, acct/clock, clock, clock-floor)
		b.ReportMetric(acct/floor, "loop-zcprof-per-event/floor")
		b.ReportMetric(acct/clock, "loop-zcprof-per-event/clock-floor")
	}
}

// say prints a line of the bench's table: on stdout, since the testing
// package keeps only the first lines of a benchmark's log.
func say(format string, args ...any) {
	fmt.Printf(format+"\n", args...)
}

func fmtShare(xs []float64) string {
	if len(xs) == 0 {
		return ""
	}
	return fmt.Sprintf("%.1f%%", 100*median(xs))
}

const loopCalls = 2_000_000

// loopRun runs loopCalls getppid() calls on a thread pinned to cpu with a
// tool attached around them (nil: none) and returns the thread's CPU.
func loopRun(cpu int, attach func([]int) (func() (benchReport, error), error)) (uint64, benchReport, error) {
	type started struct {
		tid int
		err error
	}
	ready, done := make(chan started, 1), make(chan uint64, 1)
	run := make(chan bool)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		var set unix.CPUSet
		set.Set(cpu)
		err := unix.SchedSetaffinity(0, &set)
		ready <- started{unix.Gettid(), err}
		if err != nil || !<-run {
			return
		}
		var a, b unix.Timespec
		unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &a)
		for i := 0; i < loopCalls; i++ {
			unix.Getppid()
		}
		unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &b)
		done <- uint64(b.Nano() - a.Nano())
	}()
	st := <-ready
	if st.err != nil {
		return 0, benchReport{}, st.err
	}
	detach := func() (benchReport, error) { return benchReport{}, nil }
	if attach != nil {
		var err error
		if detach, err = attach([]int{st.tid}); err != nil {
			run <- false
			return 0, benchReport{}, err
		}
	}
	run <- true
	ns := <-done
	r, err := detach()
	return ns, r, err
}

func dispatchNS() uint64 {
	ns, _ := profiler.DispatchNS(kernel.TpBTF)
	return ns
}

// benchTool is one tool under test and what its pairs measured.
type benchTool struct {
	name   string
	attach func(tids []int) (detach func() (benchReport, error), err error)

	ratios   []float64
	excessNS []float64 // with - without, per pair
	events   []float64
	reported []float64 // zcprof's own overhead.share
}

// benchReport is what a tool said about its run.
type benchReport struct {
	events uint64  // handler runs in the workload's threads (0: unknown)
	share  float64 // zcprof's reported overhead share (0: not zcprof)
}

func (t *benchTool) add(base, with uint64, r benchReport) {
	t.ratios = append(t.ratios, float64(with)/float64(base))
	if r.events > 0 {
		t.excessNS = append(t.excessNS, float64(int64(with-base)))
		t.events = append(t.events, float64(r.events))
	}
	if r.share > 0 {
		t.reported = append(t.reported, r.share)
	}
}

// perEvent is the median over pairs of the excess per event.
func (t *benchTool) perEvent() float64 {
	var per []float64
	for i := range t.events {
		per = append(per, t.excessNS[i]/t.events[i])
	}
	if len(per) == 0 {
		return 0
	}
	return median(per)
}

// benchRun runs one transfer with a tool attached around it (nil: none)
// and returns the workload threads' CPU.
func benchRun(cfg workload.Config, attach func([]int) (func() (benchReport, error), error)) (uint64, benchReport, error) {
	t, err := workload.Prepare(cfg)
	if err != nil {
		return 0, benchReport{}, err
	}
	defer t.Close()
	var tids []int
	for _, th := range t.Threads() {
		tids = append(tids, th.TID)
	}
	detach := func() (benchReport, error) { return benchReport{}, nil }
	if attach != nil {
		if detach, err = attach(tids); err != nil {
			return 0, benchReport{}, err
		}
	}
	before, err := threadsRuntime(tids)
	if err == nil {
		_, err = t.Run(context.Background())
	}
	var after uint64
	if err == nil {
		after, err = threadsRuntime(tids)
	}
	r, derr := detach()
	if err = errors.Join(err, derr); err != nil {
		return 0, benchReport{}, err
	}
	return after - before, r, nil
}

func threadsRuntime(tids []int) (uint64, error) {
	var sum uint64
	for _, tid := range tids {
		rt, err := procfs.ThreadRuntime(os.Getpid(), tid)
		if err != nil {
			return 0, err
		}
		sum += rt
	}
	return sum, nil
}

// zcprofAttach opens a session on the workload's threads as `zcprof
// profile --byte-classes byteClasses --backend backend` would.
func zcprofAttach(byteClasses, backend string) func([]int) (func() (benchReport, error), error) {
	return func(tids []int) (func() (benchReport, error), error) {
		sess, err := profiler.Open(profiler.Options{Target: profiler.Target{TIDs: tids}, ByteClasses: byteClasses})
		if err != nil {
			return nil, err
		}
		var ext profiler.Extension
		if backend != kernel.None {
			if ext, err = attrib.Extension(attrib.Options{Backend: backend}, backends.Attribution())(sess); err != nil {
				sess.Close()
				return nil, err
			}
		}
		s0, err := sess.Snapshot()
		if err != nil {
			sess.Close()
			return nil, err
		}
		return func() (benchReport, error) {
			s1, err := sess.Snapshot()
			if ext != nil {
				err = errors.Join(err, ext.Close())
			}
			err = errors.Join(err, sess.Close())
			if err != nil {
				return benchReport{}, err
			}
			var scope []report.CPU
			for _, p := range profiler.Processes(profiler.Delta(s0, s1), false) {
				scope = append(scope, p.CPU)
			}
			var o report.Overhead
			report.ScopeOverhead(&o, scope...)
			return benchReport{events: o.Events, share: o.Share}, nil
		}, nil
	}
}

// floorAttach attaches a floor program (floor_: trivial, clock_: plus one
// clock read) to every accounting hook, counting runs in this process (the
// workload's threads and little else).
func floorAttach(prefix string) func([]int) (func() (benchReport, error), error) {
	return func([]int) (func() (benchReport, error), error) { return attachFloor(prefix) }
}

// attachFloor attaches floor.bpf.c's programs named with prefix.
func attachFloor(prefix string) (func() (benchReport, error), error) {
	spec, err := bpf.LoadFloor()
	if err != nil {
		return nil, err
	}
	if err := spec.Variables["floor_tgid"].Set(uint32(os.Getpid())); err != nil {
		return nil, err
	}
	for name := range spec.Programs {
		if !strings.HasPrefix(name, prefix) {
			delete(spec.Programs, name)
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Cache: bpf.KernelBTF})
	if err != nil {
		return nil, err
	}
	var links []link.Link
	closeAll := func() error {
		var errs []error
		for _, l := range links {
			errs = append(errs, l.Close())
		}
		coll.Close()
		return errors.Join(errs...)
	}
	for _, p := range coll.Programs {
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			closeAll()
			return nil, err
		}
		links = append(links, l)
	}
	return func() (benchReport, error) {
		var perCPU []bpf.FloorFloorCount
		err := coll.Maps["floor_runs"].Lookup(uint32(0), &perCPU)
		var runs uint64
		for _, c := range perCPU {
			runs += c.Runs
		}
		return benchReport{events: runs}, errors.Join(err, closeAll())
	}, nil
}

// perfAttach runs perf record system-wide with call graphs until detach.
func perfAttach([]int) (func() (benchReport, error), error) {
	dir, err := os.MkdirTemp("", "zcprof-bench-perf-")
	if err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "perf.data")
	cmd := exec.Command("perf", "record", "-a", "-g", "-F", "999", "-q", "-o", out)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("perf: %w", err)
	}
	// perf writes its header once the events are open.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if st, err := os.Stat(out); err == nil && st.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			os.RemoveAll(dir)
			return nil, errors.New("perf record did not start within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	return func() (benchReport, error) {
		// perf record re-raises the SIGINT it handled: not a failure.
		err := interruptUntilExit(cmd, "perf record")
		os.RemoveAll(dir)
		return benchReport{}, err
	}, nil
}

// bpftraceScript times every syscall and softirq the way a first try
// would: hash maps keyed by tid and cpu, on the classic tracepoints.
const bpftraceScript = `
BEGIN { printf("zcprof-bench-ready\n"); }
tracepoint:raw_syscalls:sys_enter { @start[tid] = nsecs; }
tracepoint:raw_syscalls:sys_exit /@start[tid]/ { @sys[pid] = sum(nsecs - @start[tid]); delete(@start[tid]); }
tracepoint:irq:softirq_entry { @sstart[cpu] = nsecs; }
tracepoint:irq:softirq_exit /@sstart[cpu]/ { @soft[cpu] = sum(nsecs - @sstart[cpu]); delete(@sstart[cpu]); }
`

func bpftraceAttach([]int) (func() (benchReport, error), error) {
	// bpftrace finds tracepoints in tracefs, which a fresh machine has
	// not mounted: mounted for it as zcprof mounts it for itself.
	tracefs, err := pseudofs.Acquire(pseudofs.Tracefs)
	if err != nil {
		return nil, fmt.Errorf("bpftrace needs tracefs: %w", err)
	}
	cmd := exec.Command("bpftrace", "-e", bpftraceScript)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tracefs.Release()
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		tracefs.Release()
		return nil, fmt.Errorf("bpftrace: %w", err)
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		var lines []string
		for sc.Scan() {
			// BEGIN runs once every probe is attached.
			if strings.HasPrefix(sc.Text(), "zcprof-bench-ready") {
				ready <- nil
				for sc.Scan() {
				}
				return
			}
			lines = append(lines, sc.Text())
		}
		ready <- fmt.Errorf("bpftrace exited before attaching: %s", strings.Join(lines, "; "))
	}()
	select {
	case err := <-ready:
		if err != nil {
			cmd.Wait()
			tracefs.Release()
			return nil, err
		}
	case <-time.After(120 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		tracefs.Release()
		return nil, errors.New("bpftrace did not attach within 120s")
	}
	return func() (benchReport, error) {
		err := interruptUntilExit(cmd, "bpftrace")
		return benchReport{}, errors.Join(err, tracefs.Release())
	}, nil
}

// interruptUntilExit sends SIGINT until the tool exits: bpftrace 0.17 was
// seen here to miss one, and stay attached.
func interruptUntilExit(cmd *exec.Cmd, name string) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for i := 0; ; i++ {
		cmd.Process.Signal(unix.SIGINT)
		select {
		case err := <-done:
			if err != nil && !interruptedAsAsked(err) {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		case <-time.After(time.Second):
		}
		if i == 30 {
			cmd.Process.Kill()
			<-done
			return fmt.Errorf("%s did not exit on SIGINT within 30s", name)
		}
	}
}

func interruptedAsAsked(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGINT
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func minMax(xs []float64) (float64, float64) {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0, 0
	}
	return s[0], s[len(s)-1]
}

func metricName(s string) string {
	f := strings.Fields(strings.NewReplacer("(", "", ")", "", ",", "").Replace(s))
	if len(f) > 3 {
		f = f[:3]
	}
	return strings.Join(f, "-")
}

func numCPU() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 1
	}
	return set.Count()
}
