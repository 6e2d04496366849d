package profiler

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/workload/iouring"
)

// An io_uring send that finds the socket full is retried as task work. On
// a ring without DEFER_TASKRUN (liburing's default) that task work runs on
// the way out of whatever syscall comes next: here a read of the peer,
// made by the same thread, which is what wakes the send. Its bytes still
// belong to tx.io_uring; the read's and the plain sends' do not.

const uringTaskworkEnv = "ZCPROF_TEST_URING_TASKWORK"

const uringTaskworkRounds = 50

type uringTaskworkResult struct {
	UringBytes uint64 // sum of the SEND completions
	RetriedOut int    // sends completed by the peer's read, not in io_uring_enter
	FillBytes  uint64 // plain sends that filled the socket
	ReadBytes  uint64
}

func init() { childMode(uringTaskworkEnv, "io_uring task-work", runUringTaskworkChild) }

func runUringTaskworkChild(out string) error {
	runtime.LockOSThread()
	r, err := iouring.New(4)
	if err != nil {
		return err
	}
	defer r.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	if err := unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		return err
	}
	var res uringTaskworkResult
	chunk := make([]byte, 1024)
	buf := make([]byte, 1<<20)
	for i := range uringTaskworkRounds {
		for {
			n, err := unix.SendmsgN(fds[0], chunk, nil, nil, unix.MSG_DONTWAIT)
			if errors.Is(err, unix.EAGAIN) {
				break
			}
			if err != nil {
				return err
			}
			res.FillBytes += uint64(n)
		}
		sqe, err := r.GetSQE()
		if err != nil {
			return err
		}
		iouring.PrepSend(sqe, fds[0], chunk, 0, uint64(i))
		if _, err := r.Submit(0); err != nil {
			return err
		}
		if _, ok := r.PeekCQE(); ok {
			return errors.New("send completed into a full socket")
		}
		n, err := unix.Read(fds[1], buf)
		if err != nil {
			return err
		}
		res.ReadBytes += uint64(n)
		c, ok := r.PeekCQE()
		if ok {
			res.RetriedOut++
		} else if c, err = r.WaitCQE(); err != nil {
			return err
		}
		if c.Res < 0 {
			return fmt.Errorf("io_uring send: %w", unix.Errno(-c.Res))
		}
		res.UringBytes += uint64(c.Res)
	}
	return writeResult(out, res)
}

func TestUringRetryOutsideEnter(t *testing.T) {
	requireBPF(t)
	if err := iouring.Available(); err != nil {
		t.Skip(err)
	}
	var r uringTaskworkResult
	d, p := profileChildMode(t, uringTaskworkEnv, ProfileOptions{}, &r)
	if why, lost := d.Backends.Unavailable["io_uring send bytes"]; lost {
		t.Skipf("no io_uring send bytes on this kernel, as stated: %s", why)
	}
	// The kernel ran every retry where this test expects it to.
	if r.RetriedOut != uringTaskworkRounds || r.UringBytes != uringTaskworkRounds*1024 {
		t.Fatalf("child: %+v, want all %d sends of 1024 bytes retried at the read's exit", r, uringTaskworkRounds)
	}
	paths := p.Paths
	if got := findPath(paths, "tx.io_uring").Bytes; got != r.UringBytes {
		t.Errorf("tx.io_uring: %d bytes, the ring's completions say %d", got, r.UringBytes)
	}
	// The plain sends and the reads are on an AF_UNIX socket: "other",
	// not TCP's paths, and their sock_sendmsg is not io_uring's (above).
	if got := findPath(paths, "tx.write").Bytes + findPath(paths, "rx.read").Bytes; got != 0 {
		t.Errorf("tx.write and rx.read: %d bytes from AF_UNIX sends of %d and reads of %d bytes", got, r.FillBytes, r.ReadBytes)
	}
}
