package iouring

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/testenv"
)

func newRing(t *testing.T, entries uint32) *Ring {
	t.Helper()
	if err := Available(); err != nil {
		t.Skip(err)
	}
	r, err := New(entries)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestLayout(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"io_uring_params", unsafe.Sizeof(params{}), 120},
		{"io_sqring_offsets", unsafe.Sizeof(sqringOffsets{}), 40},
		{"io_cqring_offsets", unsafe.Sizeof(cqringOffsets{}), 40},
		{"io_uring_sqe", unsafe.Sizeof(SQE{}), 64},
		{"io_uring_cqe", unsafe.Sizeof(CQE{}), 16},
		{"sqe.user_data offset", unsafe.Offsetof(SQE{}.UserData), 32},
		{"sqe.addr3 offset", unsafe.Offsetof(SQE{}.Addr3), 48},
		{"io_uring_probe_op", unsafe.Sizeof(probeOp{}), 8},
	} {
		if c.got != c.want {
			t.Errorf("%s: size %d, want %d", c.name, c.got, c.want)
		}
	}
}

func TestNopOrderingAndFull(t *testing.T) {
	r := newRing(t, 8)
	if r.SQEntries() != 8 || r.CQEntries() != 16 {
		t.Fatalf("entries sq=%d cq=%d, want 8/16", r.SQEntries(), r.CQEntries())
	}
	for i := range 8 {
		sqe, err := r.GetSQE()
		if err != nil {
			t.Fatalf("GetSQE %d: %v", i, err)
		}
		PrepNop(sqe, uint64(100+i))
	}
	if _, err := r.GetSQE(); !errors.Is(err, ErrRingFull) {
		t.Fatalf("9th GetSQE: err=%v, want ErrRingFull", err)
	}
	n, err := r.Submit(8)
	if err != nil || n != 8 {
		t.Fatalf("Submit: n=%d err=%v", n, err)
	}
	if r.Ready() != 8 {
		t.Fatalf("Ready=%d, want 8", r.Ready())
	}
	for i := range 8 {
		c, err := r.WaitCQE()
		if err != nil {
			t.Fatal(err)
		}
		if c.UserData != uint64(100+i) || c.Res != 0 {
			t.Fatalf("cqe %d: user_data=%d res=%d", i, c.UserData, c.Res)
		}
	}
	if _, ok := r.PeekCQE(); ok {
		t.Fatal("extra CQE")
	}
	// The SQ ring is free again after submission.
	for range 3 {
		for i := range 8 {
			sqe, err := r.GetSQE()
			if err != nil {
				t.Fatal(err)
			}
			PrepNop(sqe, uint64(i))
		}
		if _, err := r.Submit(8); err != nil {
			t.Fatal(err)
		}
		for range 8 {
			if _, err := r.WaitCQE(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestSendSocketpair(t *testing.T) {
	r := newRing(t, 4)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	msg := []byte("hello, ring")
	sqe, _ := r.GetSQE()
	PrepSend(sqe, fds[0], msg, 0, 7)
	c, err := r.WaitCQE()
	if err != nil {
		t.Fatal(err)
	}
	if c.UserData != 7 || int(c.Res) != len(msg) {
		t.Fatalf("cqe: %+v", c)
	}
	buf := make([]byte, 64)
	n, err := unix.Read(fds[1], buf)
	if err != nil || !bytes.Equal(buf[:n], msg) {
		t.Fatalf("read %q err=%v", buf[:n], err)
	}
}

func TestReadFile(t *testing.T) {
	r := newRing(t, 4)
	f, err := os.CreateTemp(t.TempDir(), "ring-read")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	sqe, _ := r.GetSQE()
	PrepRead(sqe, int(f.Fd()), buf, 4, 9)
	c, err := r.WaitCQE()
	if err != nil {
		t.Fatal(err)
	}
	if c.UserData != 9 || c.Res != 8 || string(buf) != "456789ab" {
		t.Fatalf("cqe %+v, read %q", c, buf)
	}
}

func TestSendZCNotification(t *testing.T) {
	r := newRing(t, 4)
	if ok, err := Supported(OpSendZC); err != nil || !ok {
		t.Skipf("SEND_ZC not supported: %v", err)
	}
	c, s := testenv.TCPPair(t)
	buf := bytes.Repeat([]byte{0xab}, 64<<10)
	const sends = 4
	for i := range sends {
		sqe, _ := r.GetSQE()
		PrepSendZC(sqe, c, buf, unix.MSG_WAITALL, true, uint64(i))
		if _, err := r.Submit(0); err != nil {
			t.Fatal(err)
		}
	}
	// Drain the receiver concurrently so the sends can complete.
	got := make(chan int, 1)
	go func() {
		rb := make([]byte, 1<<20)
		total := 0
		for total < sends*len(buf) {
			n, err := unix.Read(s, rb)
			if err != nil || n == 0 {
				break
			}
			total += n
		}
		got <- total
	}()
	var sendCQEs, notifs, copied, more int
	for sendCQEs < sends || notifs < more {
		cqe, err := r.WaitCQE()
		if err != nil {
			t.Fatal(err)
		}
		if cqe.Flags&CQEFNotif != 0 {
			notifs++
			if uint32(cqe.Res)&NotifUsageZCCopied != 0 {
				copied++
			}
			continue
		}
		sendCQEs++
		if int(cqe.Res) != len(buf) {
			t.Fatalf("send cqe res=%d", cqe.Res)
		}
		if cqe.Flags&CQEFMore != 0 {
			more++
		}
	}
	if n := <-got; n != sends*len(buf) {
		t.Fatalf("received %d bytes", n)
	}
	if more != sends || notifs != sends {
		t.Fatalf("F_MORE on %d sends, %d notifications; want %d each", more, notifs, sends)
	}
	// Loopback delivery always copies (skb_copy_ubufs), docs/architecture.md.
	if copied != notifs {
		t.Errorf("copied=%d of %d notifications; loopback should always report ZC_COPIED", copied, notifs)
	}
}

// TestCQOverflow: more completions than CQ slots are kept by the kernel
// (IORING_FEAT_NODROP) and show up after the next io_uring_enter, in order.
func TestCQOverflow(t *testing.T) {
	r := newRing(t, 8) // CQ: 16 entries
	const total = 40
	for i := range total / 8 {
		for j := range 8 {
			sqe, err := r.GetSQE()
			if err != nil {
				t.Fatal(err)
			}
			PrepNop(sqe, uint64(i*8+j))
		}
		if _, err := r.Submit(0); err != nil {
			t.Fatal(err)
		}
	}
	if r.Ready() != r.CQEntries() {
		t.Fatalf("Ready=%d, want a full CQ (%d)", r.Ready(), r.CQEntries())
	}
	for i := range total {
		// Entering the kernel moves overflowed completions into the ring.
		c, ok, err := r.WaitCQETimeout(time.Second)
		if err != nil || !ok {
			t.Fatalf("completion %d lost (%v)", i, err)
		}
		if c.UserData != uint64(i) {
			t.Fatalf("completion %d has user_data %d", i, c.UserData)
		}
	}
}

func TestCQEntries(t *testing.T) {
	newRing(t, 1)
	r, err := NewWith(8, Options{CQEntries: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.CQEntries() != 1024 {
		t.Fatalf("CQ entries %d, want 1024", r.CQEntries())
	}
}

// TestDeferTaskrun: a send that found the socket full is retried when the
// peer drains it. By default the retry runs as task work on the way out of
// whatever syscall woke it (here the peer's read, on this same thread);
// with DeferTaskrun only inside io_uring_enter.
func TestDeferTaskrun(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	for _, deferred := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "deferred"}[deferred], func(t *testing.T) {
			// The ring belongs to the thread that made it.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			r, err := NewWith(4, Options{DeferTaskrun: deferred})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Deferred() != deferred {
				t.Fatalf("Deferred() = %v on a 6.1+ kernel, asked %v", r.Deferred(), deferred)
			}
			fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fds[0])
			defer unix.Close(fds[1])
			unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 4096)
			chunk := make([]byte, 1024)
			for {
				if _, err := unix.SendmsgN(fds[0], chunk, nil, nil, unix.MSG_DONTWAIT); err == unix.EAGAIN {
					break
				} else if err != nil {
					t.Fatal(err)
				}
			}
			sqe, _ := r.GetSQE()
			PrepSend(sqe, fds[0], chunk, 0, 1)
			if n, err := r.Submit(0); err != nil || n != 1 {
				t.Fatalf("submit: %d, %v", n, err)
			}
			if _, ok := r.PeekCQE(); ok {
				t.Fatal("send completed into a full socket")
			}
			buf := make([]byte, 1<<20)
			if _, err := unix.Read(fds[1], buf); err != nil {
				t.Fatal(err)
			}
			c, ok := r.PeekCQE()
			if ok == deferred {
				t.Fatalf("after the peer's read: completion present %v (%+v), want %v", ok, c, !deferred)
			}
			if !ok {
				if c, ok, err = r.WaitCQETimeout(5 * time.Second); err != nil || !ok {
					t.Fatalf("wait: ok %v, %v", ok, err)
				}
			}
			if c.UserData != 1 || int(c.Res) != len(chunk) {
				t.Fatalf("cqe %+v, want user_data 1 and %d bytes", c, len(chunk))
			}
		})
	}
}

func TestWaitCQETimeout(t *testing.T) {
	r := newRing(t, 1)
	c, ok, err := r.WaitCQETimeout(10 * time.Millisecond)
	if err != nil || ok {
		t.Fatalf("idle ring: %+v, %v, %v", c, ok, err)
	}
	sqe, _ := r.GetSQE()
	PrepNop(sqe, 9)
	if _, err := r.Submit(0); err != nil {
		t.Fatal(err)
	}
	if c, ok, err = r.WaitCQETimeout(time.Second); err != nil || !ok || c.UserData != 9 {
		t.Fatalf("nop: %+v, %v, %v", c, ok, err)
	}
}
