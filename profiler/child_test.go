package profiler

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	addr := &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}
	if err := unix.Bind(ln, addr); err != nil {
		return err
	}
	if err := unix.Listen(ln, 1); err != nil {
		return err
	}
	sa, err := unix.Getsockname(ln)
	if err != nil {
		return err
	}
	tx, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	if err := unix.Connect(tx, sa); err != nil {
		return err
	}
	rx, _, err := unix.Accept(ln)
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
