package profiler

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/workload/iouring"
)

// io_uring_enter is a socket send only when what it submits is one: a ring
// reading a file is on the io_uring path, not tx.io_uring. The same ring's
// sends over TCP are tx.io_uring's, calls and bytes.

const uringPathEnv = "ZCPROF_TEST_URING_PATH"

const (
	uringFileReads = 300
	uringSends     = 20
	uringSendSize  = 16 << 10
)

type uringPathResult struct {
	FileBytes, SentBytes, ReadBytes uint64
}

func init() { childMode(uringPathEnv, "io_uring path", runUringPathChild) }

// uringDo submits one SQE, waits for its completion and returns its result.
func uringDo(r *iouring.Ring, prep func(*iouring.SQE)) (int, error) {
	sqe, err := r.GetSQE()
	if err != nil {
		return 0, err
	}
	prep(sqe)
	if _, err := r.Submit(1); err != nil {
		return 0, err
	}
	c, err := r.WaitCQE()
	if err != nil {
		return 0, err
	}
	if c.Res < 0 {
		return 0, unix.Errno(-c.Res)
	}
	return int(c.Res), nil
}

func runUringPathChild(out string) error {
	runtime.LockOSThread()
	r, err := iouring.New(4)
	if err != nil {
		return err
	}
	defer r.Close()
	var res uringPathResult

	f, err := os.CreateTemp("", "zcprof-uring-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 256<<10)
	if _, err := f.Write(buf); err != nil {
		return err
	}
	for range uringFileReads {
		n, err := uringDo(r, func(sqe *iouring.SQE) { iouring.PrepRead(sqe, int(f.Fd()), buf, 0, 1) })
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		res.FileBytes += uint64(n)
	}

	tx, rx, err := loopbackPair(unix.SOCK_STREAM)
	if err != nil {
		return err
	}
	for range uringSends {
		n, err := uringDo(r, func(sqe *iouring.SQE) {
			iouring.PrepSend(sqe, tx, buf[:uringSendSize], unix.MSG_WAITALL, 2)
		})
		if err != nil {
			return fmt.Errorf("send: %w", err)
		}
		res.SentBytes += uint64(n)
		for got := 0; got < n; {
			m, err := unix.Read(rx, buf)
			if err != nil {
				return err
			}
			got += m
			res.ReadBytes += uint64(m)
		}
	}
	return writeResult(out, res)
}

func TestUringFileReadIsNotASend(t *testing.T) {
	requireBPF(t)
	if err := iouring.Available(); err != nil {
		t.Skip(err)
	}
	eachAccountingBackend(t, func(t *testing.T, backend string) {
		t.Setenv("GODEBUG", "asyncpreemptoff=1") // no EINTR retries of io_uring_enter
		var r uringPathResult
		d, p := profileChildMode(t, uringPathEnv, ProfileOptions{Backend: backend}, &r)
		if r.FileBytes != uringFileReads*256<<10 || r.SentBytes != uringSends*uringSendSize || r.ReadBytes != r.SentBytes {
			t.Fatalf("child: %+v", r)
		}
		paths := p.Paths
		ring, send := findPath(paths, "io_uring"), findPath(paths, "tx.io_uring")
		// Each operation is one io_uring_enter (submit and wait): the
		// file reads' are on io_uring, the sends' on tx.io_uring.
		if ring.Calls != uringFileReads || ring.CPUNS == 0 || ring.Bytes != 0 {
			t.Errorf("io_uring: %d calls, %d ns, %d bytes; want the %d file reads' calls and time, no bytes", ring.Calls, ring.CPUNS, ring.Bytes, uringFileReads)
		}
		if send.Calls != uringSends {
			t.Errorf("tx.io_uring: %d calls, want the %d sends only", send.Calls, uringSends)
		}
		if why, lost := d.Backends.Unavailable["io_uring send bytes"]; lost {
			t.Logf("no io_uring send bytes on this kernel, as stated: %s", why)
		} else if send.Bytes != r.SentBytes {
			t.Errorf("tx.io_uring: %d bytes, the ring sent %d", send.Bytes, r.SentBytes)
		}
		if got := findPath(paths, "rx.read").Bytes; got != r.ReadBytes {
			t.Errorf("rx.read: %d bytes, the reads got %d", got, r.ReadBytes)
		}
	})
}
