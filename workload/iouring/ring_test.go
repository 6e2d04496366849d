package iouring

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
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

// tcpPair returns a connected loopback TCP pair (client, server).
func tcpPair(t *testing.T) (int, int) {
	t.Helper()
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(ln, 1); err != nil {
		t.Fatal(err)
	}
	sa, _ := unix.Getsockname(ln)
	c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Connect(c, sa); err != nil {
		t.Fatal(err)
	}
	s, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(c); unix.Close(s) })
	return c, s
}

func TestSendZCNotification(t *testing.T) {
	r := newRing(t, 4)
	if ok, err := Supported(OpSendZC); err != nil || !ok {
		t.Skipf("SEND_ZC not supported: %v", err)
	}
	c, s := tcpPair(t)
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
	// Loopback delivery always copies (skb_copy_ubufs), KERNEL.md §4.3.
	if copied != notifs {
		t.Errorf("copied=%d of %d notifications; loopback should always report ZC_COPIED", copied, notifs)
	}
}

// TestCQOverflow: more completions than CQ slots are kept by the kernel
// (IORING_FEAT_NODROP) and show up after Flush, in order.
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
		c, ok := r.PeekCQE()
		if !ok {
			if err := r.Flush(); err != nil {
				t.Fatal(err)
			}
			if c, ok = r.PeekCQE(); !ok {
				t.Fatalf("completion %d lost", i)
			}
		}
		if c.UserData != uint64(i) {
			t.Fatalf("completion %d has user_data %d", i, c.UserData)
		}
	}
}

func TestNewCQ(t *testing.T) {
	newRing(t, 1)
	r, err := NewCQ(8, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.CQEntries() != 1024 {
		t.Fatalf("CQ entries %d, want 1024", r.CQEntries())
	}
}
