package profiler

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The socket paths (tx.write, rx.read, ...) are TCP's. A program that also
// talks UDP and over an AF_UNIX socketpair has those syscalls in "other":
// their bytes are on no socket path, and not on tx.io_uring either (whose
// bytes come from each sock_sendmsg).

const sockFamilyEnv = "ZCPROF_TEST_SOCK_FAMILY"

type sockFamilyResult struct {
	TCPSent, TCPRecv   uint64
	UDPSent, UDPRecv   uint64
	UnixSent, UnixRecv uint64
	OtherCalls         uint64 // UDP and AF_UNIX send and receive syscalls
}

func init() { childMode(sockFamilyEnv, "socket family", runSockFamilyChild) }

// loopbackPair returns two connected sockets of type typ on 127.0.0.1.
func loopbackPair(typ int) (int, int, error) {
	a, err := unix.Socket(unix.AF_INET, typ, 0)
	if err != nil {
		return -1, -1, err
	}
	if err := unix.Bind(a, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return -1, -1, err
	}
	if typ == unix.SOCK_STREAM {
		if err := unix.Listen(a, 1); err != nil {
			return -1, -1, err
		}
	}
	sa, err := unix.Getsockname(a)
	if err != nil {
		return -1, -1, err
	}
	b, err := unix.Socket(unix.AF_INET, typ, 0)
	if err != nil {
		return -1, -1, err
	}
	if err := unix.Connect(b, sa); err != nil {
		return -1, -1, err
	}
	if typ != unix.SOCK_STREAM {
		return b, a, nil
	}
	c, _, err := unix.Accept(a)
	return b, c, err
}

func runSockFamilyChild(out string) error {
	runtime.LockOSThread()
	var r sockFamilyResult
	buf := make([]byte, 64<<10)
	rbuf := make([]byte, 64<<10)

	// TCP: the only bytes of tx.write and rx.read.
	tx, rx, err := loopbackPair(unix.SOCK_STREAM)
	if err != nil {
		return fmt.Errorf("tcp: %w", err)
	}
	for range 8 {
		n, err := unix.Write(tx, buf[:16<<10])
		if err != nil {
			return err
		}
		r.TCPSent += uint64(n)
		for got := 0; got < n; {
			m, err := unix.Read(rx, rbuf)
			if err != nil {
				return err
			}
			got += m
			r.TCPRecv += uint64(m)
		}
	}

	// UDP, with each send and receive syscall.
	us, ur, err := loopbackPair(unix.SOCK_DGRAM)
	if err != nil {
		return fmt.Errorf("udp: %w", err)
	}
	for i := range 20 {
		var n int
		switch i % 3 {
		case 0:
			n, err = unix.Write(us, buf[:1000])
		case 1:
			err = unix.Send(us, buf[:1000], 0)
			n = 1000
		default:
			n, err = unix.SendmsgN(us, buf[:1000], nil, nil, 0)
		}
		if err != nil {
			return err
		}
		r.UDPSent += uint64(n)
		if i%2 == 0 {
			n, err = unix.Read(ur, rbuf)
		} else {
			n, _, err = unix.Recvfrom(ur, rbuf, 0)
		}
		if err != nil {
			return err
		}
		r.UDPRecv += uint64(n)
		r.OtherCalls += 2
	}

	// AF_UNIX stream socketpair.
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return err
	}
	for range 20 {
		n, err := unix.Write(fds[0], buf[:4096])
		if err != nil {
			return err
		}
		r.UnixSent += uint64(n)
		m, err := unix.Read(fds[1], rbuf)
		if err != nil {
			return err
		}
		r.UnixRecv += uint64(m)
		r.OtherCalls += 2
	}
	return writeResult(out, r)
}

func TestNonTCPSocketsAreNotTCPPaths(t *testing.T) {
	requireBPF(t)
	eachAccountingBackend(t, func(t *testing.T, backend string) {
		var r sockFamilyResult
		_, p := profileChildMode(t, sockFamilyEnv, ProfileOptions{Backend: backend}, &r)
		if r.UDPSent == 0 || r.UnixSent == 0 || r.UDPRecv != r.UDPSent || r.UnixRecv != r.UnixSent {
			t.Fatalf("child: %+v", r)
		}
		paths := p.Paths
		if got := findPath(paths, "tx.write"); got.Bytes != r.TCPSent || got.Calls != 8 {
			t.Errorf("tx.write: %d bytes in %d calls, want the TCP sends only: %d bytes in 8 calls (UDP %d, AF_UNIX %d bytes)",
				got.Bytes, got.Calls, r.TCPSent, r.UDPSent, r.UnixSent)
		}
		if got := findPath(paths, "rx.read").Bytes; got != r.TCPRecv {
			t.Errorf("rx.read: %d bytes, want the TCP receives only: %d", got, r.TCPRecv)
		}
		if got := findPath(paths, "tx.io_uring").Bytes; got != 0 {
			t.Errorf("tx.io_uring: %d bytes from a program without a ring", got)
		}
		if got := findPath(paths, "other").Calls; got < r.OtherCalls {
			t.Errorf("other: %d calls, want at least the %d UDP and AF_UNIX syscalls", got, r.OtherCalls)
		}
	})
}

// The socket calls take their TCP path on trust at sys_enter and have the
// fd checked at their first event that needs the path (settle_fd in
// bpf/common.h). A program with no TCP socket at all must then have no
// time, call or byte on a socket path: not the softirq a UDP send over
// loopback runs inside its sendto, not the switch a pipe read blocks in.
const nonTCPEnv = "ZCPROF_TEST_NON_TCP"

type nonTCPResult struct {
	UDPSent, PipeRead uint64
}

func init() { childMode(nonTCPEnv, "no TCP socket", runNonTCPChild) }

func runNonTCPChild(out string) error {
	runtime.LockOSThread()
	var r nonTCPResult
	buf := make([]byte, 60000)

	// A datagram this size crosses loopback in one skb, received in the
	// NET_RX softirq its own sendto runs.
	us, ur, err := loopbackPair(unix.SOCK_DGRAM)
	if err != nil {
		return fmt.Errorf("udp: %w", err)
	}
	for range 200 {
		if err := unix.Sendto(us, buf, 0, nil); err != nil {
			return err
		}
		r.UDPSent += uint64(len(buf))
		if _, _, err := unix.Recvfrom(ur, buf, 0); err != nil {
			return err
		}
	}

	// Reads that block until another thread writes: each is switched out
	// inside the call.
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		return err
	}
	errs := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		for range 20 {
			time.Sleep(2 * time.Millisecond)
			if _, err := unix.Write(p[1], buf[:4096]); err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	for r.PipeRead < 20*4096 {
		n, err := unix.Read(p[0], buf)
		if err != nil {
			return err
		}
		r.PipeRead += uint64(n)
	}
	if err := <-errs; err != nil {
		return err
	}
	return writeResult(out, r)
}

func TestNonTCPCallsLeaveSocketPathsEmpty(t *testing.T) {
	requireBPF(t)
	eachAccountingBackend(t, func(t *testing.T, backend string) {
		var r nonTCPResult
		_, p := profileChildMode(t, nonTCPEnv, ProfileOptions{Backend: backend, Threads: true}, &r)
		if r.UDPSent != 200*60000 || r.PipeRead != 20*4096 {
			t.Fatalf("child: %+v", r)
		}
		for _, name := range []string{"tx.write", "tx.msg_zerocopy", "rx.read"} {
			if got := findPath(p.Paths, name); got.Calls != 0 || got.Bytes != 0 || got.CPUNS != 0 || got.SoftirqNS != 0 || got.HardirqNS != 0 {
				t.Errorf("%s: %d calls, %d bytes, %d ns, softirq %d ns, hardirq %d ns: want nothing from a program without TCP",
					name, got.Calls, got.Bytes, got.CPUNS, got.SoftirqNS, got.HardirqNS)
				for _, th := range p.Threads {
					t.Logf("thread %d (%s): %+v", th.TID, th.Comm, th.Paths)
				}
			}
		}
		if got := findPath(p.Paths, "other"); got.Calls < 400+20 || got.SoftirqNS == 0 {
			t.Errorf("other: %d calls, softirq %d ns: want the 400 UDP and 20+ pipe calls, with the sends' NET_RX", got.Calls, got.SoftirqNS)
		}
	})
}
