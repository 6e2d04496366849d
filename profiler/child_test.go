package profiler

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/spawn"
)

// The BPF tests profile a separate process: this test binary re-executed
// with ZCPROF_TEST_CHILD set. It moves bytes over loopback TCP with raw
// syscalls, counts exactly what it did and writes the counts to a file.

const childEnv = "ZCPROF_TEST_CHILD"

type childCounts struct {
	SenderTID, ReceiverTID int
	SentBytes, WriteCalls  uint64
	RecvBytes, ReadCalls   uint64
	FileBytes, FileWrites  uint64
}

func TestMain(m *testing.M) {
	spawn.RunHelperIfRequested()
	if out := os.Getenv(getppidEnv); out != "" {
		if err := runGetppidChild(out); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	if out := os.Getenv(childEnv); out != "" {
		if err := runChild(out); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChild sends over loopback for ZCPROF_TEST_SECONDS (chunk
// ZCPROF_TEST_CHUNK), receives in another locked thread, then writes a file.
func runChild(out string) error {
	runtime.LockOSThread()
	seconds := envFloat("ZCPROF_TEST_SECONDS", 1.2)
	chunk := int(envFloat("ZCPROF_TEST_CHUNK", 65536))

	tx, rx, err := loopbackPair(unix.SOCK_STREAM)
	if err != nil {
		return err
	}

	var c childCounts
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		c.ReceiverTID = unix.Gettid()
		buf := make([]byte, 256<<10)
		for {
			n, err := unix.Read(rx, buf)
			c.ReadCalls++
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				done <- err
				return
			}
			if n == 0 {
				done <- nil
				return
			}
			c.RecvBytes += uint64(n)
		}
	}()

	c.SenderTID = unix.Gettid()
	buf := make([]byte, chunk)
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	for time.Now().Before(deadline) {
		n, err := unix.Write(tx, buf)
		c.WriteCalls++
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		c.SentBytes += uint64(n)
	}
	if err := unix.Shutdown(tx, unix.SHUT_WR); err != nil {
		return err
	}
	if err := <-done; err != nil {
		return err
	}

	// A file write is not a socket send: it must land in "other".
	f, err := os.CreateTemp("", "zcprof-test-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	for i := 0; i < 100; i++ {
		n, err := unix.Write(int(f.Fd()), buf[:4096])
		if err != nil {
			return err
		}
		c.FileWrites++
		c.FileBytes += uint64(n)
	}
	f.Close()
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o600)
}

// profileSelf profiles this test binary re-executed as a child (the
// caller has set the environment that picks the child's mode), fails on a
// non-zero exit, and decodes the JSON the child wrote to out into result.
func profileSelf(t *testing.T, opts ProfileOptions, out string, result any) *ProfileResult {
	t.Helper()
	opts.Command = []string{os.Args[0], "-test.run=^$"}
	res, err := Profile(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("child exited with %d", res.ExitCode)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, result); err != nil {
		t.Fatal(err)
	}
	return res
}

func envFloat(name string, def float64) float64 {
	var v float64
	if _, err := fmt.Sscan(os.Getenv(name), &v); err == nil && v > 0 {
		return v
	}
	return def
}

// profileByteClassChild profiles a child mode of this test binary with byte
// classes from mode, checks that the session attached what mode needs and
// released it, and returns the child's entry, the only one, with the
// kernel's zero-copy figures (the requests' with mode byteclass.Off).
func profileByteClassChild(t *testing.T, mode, out string, result any) (report.Process, *report.Document) {
	t.Helper()
	d := profileSelf(t, ProfileOptions{ByteClasses: mode}, out, result).Document
	backend, source := mode, report.ZerocopySourceKernel
	if mode == byteclass.Off {
		backend, source = "", report.ZerocopySourceRequest
	}
	if d.Backends.ByteClasses != backend {
		t.Fatalf("byte classes backend %q, want %q (unavailable %v)", d.Backends.ByteClasses, backend, d.Backends.Unavailable)
	}
	assertDetached(t, d.Backends.ProgramIDs)
	if mode != byteclass.Off {
		assertByteClassesLoaded(t, d, mode)
	}
	if len(d.Processes) != 1 {
		t.Fatalf("%d processes in the report, want the child only", len(d.Processes))
	}
	p := d.Processes[0]
	if p.Zerocopy == nil || p.Zerocopy.Source != source {
		t.Fatalf("zerocopy %+v, want source %s", p.Zerocopy, source)
	}
	return p, d
}

// childMode runs a child mode of this test binary, from an init: when env
// is set (and this is not the spawn helper, which is re-executed before the
// exec with the same environment), run gets its value and the process exits.
func childMode(env, name string, run func(value string) error) {
	v := os.Getenv(env)
	if v == "" || (len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "__zcprof")) {
		return
	}
	if err := run(v); err != nil {
		fmt.Fprintf(os.Stderr, "%s child: %v\n", name, err)
		os.Exit(3)
	}
	os.Exit(0)
}

// burnSink keeps burnThread's arithmetic from being compiled away: the
// burn is in user space, not in the clock reads.
var burnSink uint64

// burnThread spins until this thread's own clock has advanced by d.
func burnThread(d time.Duration) {
	end := threadCPU() + uint64(d)
	x := uint64(1)
	for threadCPU() < end {
		for i := 0; i < 100000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	burnSink += x
}

func threadCPU() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return uint64(ts.Nano())
}

// writeResult is how a child mode hands its own counts to the test.
func writeResult(out string, result any) error {
	b, err := json.Marshal(result)
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o600)
}

// profileChildMode profiles the child mode env with opts, decodes the
// child's counts into result and returns the document and its only process.
func profileChildMode(t *testing.T, env string, opts ProfileOptions, result any) (*report.Document, report.Process) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "result.json")
	t.Setenv(env, out)
	d := profileSelf(t, opts, out, result).Document
	assertDetached(t, d.Backends.ProgramIDs)
	if len(d.Processes) != 1 {
		t.Fatalf("%d processes in the report, want the child only", len(d.Processes))
	}
	return d, d.Processes[0]
}

// pinProcess pins every thread of this test process to cpu until the test
// ends (threads created meanwhile inherit it, and so do children), then
// gives every thread the CPUs the process had.
func pinProcess(t *testing.T, cpu int) {
	t.Helper()
	var was unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		t.Fatal(err)
	}
	var set unix.CPUSet
	set.Set(cpu)
	setAll := func(s *unix.CPUSet) error {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, s); err != nil && err != unix.ESRCH {
				return fmt.Errorf("sched_setaffinity(%d): %w", tid, err)
			}
		}
		return nil
	}
	if err := setAll(&set); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := setAll(&was); err != nil {
			t.Error(err)
		}
	})
}
