package workload

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// zcMSS is the TCP_MAXSEG for TCP_ZEROCOPY_RECEIVE runs: 4096 bytes of
// payload plus 12 bytes of timestamp option, so every segment fills exactly
// one page and can be mapped (tools/testing/selftests/net/tcp_mmap.c).
const zcMSS = pageSize + 12

// acceptTimeout bounds accept() (SO_RCVTIMEO applies to accept), so a sender
// that failed to connect cannot hang Prepare.
const acceptTimeout = 10

// listenTCP opens a blocking listening socket on addr with an ephemeral port.
func listenTCP(addr [4]byte, mss int) (fd, port int, err error) {
	fd, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, 0, fmt.Errorf("socket: %w", err)
	}
	fail := func(what string, e error) (int, int, error) {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("%s: %w", what, e)
	}
	if mss > 0 {
		// Set on the listener: the SYN-ACK advertises it and accepted
		// sockets inherit it.
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_MAXSEG, mss); err != nil {
			return fail("TCP_MAXSEG", err)
		}
	}
	tv := unix.Timeval{Sec: acceptTimeout}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fail("SO_RCVTIMEO", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: addr}); err != nil {
		return fail("bind", err)
	}
	if err := unix.Listen(fd, 16); err != nil {
		return fail("listen", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	return fd, sa.(*unix.SockaddrInet4).Port, nil
}

// acceptTCP accepts one connection as a blocking fd.
func acceptTCP(ln int) (int, error) {
	for {
		fd, _, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return -1, fmt.Errorf("accept: no connection within %ds", acceptTimeout)
		}
		if err != nil {
			return -1, fmt.Errorf("accept: %w", err)
		}
		return fd, nil
	}
}

// dialTCP connects a blocking socket to addr:port. setup runs before
// connect (socket options that must precede the handshake).
func dialTCP(addr [4]byte, port, mss int, setup func(fd int) error) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	if mss > 0 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_MAXSEG, mss); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("TCP_MAXSEG: %w", err)
		}
	}
	if setup != nil {
		if err := setup(fd); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	for {
		err = unix.Connect(fd, &unix.SockaddrInet4{Addr: addr, Port: port})
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("connect: %w", err)
	}
	return fd, nil
}

// sendto is send(2) returning the byte count (unix.Sendto drops it).
func sendto(fd int, p []byte, flags int) (int, error) {
	n, _, errno := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))),
		uintptr(len(p)), uintptr(flags), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// recvfrom is recv(2) on a raw pointer; p may be nil with MSG_TRUNC.
func recvfrom(fd int, p unsafe.Pointer, n, flags int) (int, error) {
	r, _, errno := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(p), uintptr(n), uintptr(flags), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}

// retry repeats f while it fails with EINTR (Go's own signals, e.g.
// preemption, interrupt blocking calls that are not restarted).
func retry(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != unix.EINTR {
			return n, err
		}
	}
}

// newPipe returns a pipe sized to hold at least size bytes where the
// kernel allows (fs.pipe-max-size, 1 MiB by default).
func newPipe(size int) (r, w, capacity int, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return -1, -1, 0, fmt.Errorf("pipe2: %w", err)
	}
	want := min(max(size, 64<<10), 1<<20)
	capacity, err = unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, want)
	if err != nil {
		// Keep the default 16 pages.
		capacity, err = unix.FcntlInt(uintptr(p[1]), unix.F_GETPIPE_SZ, 0)
		if err != nil {
			unix.Close(p[0])
			unix.Close(p[1])
			return -1, -1, 0, fmt.Errorf("F_GETPIPE_SZ: %w", err)
		}
	}
	return p[0], p[1], capacity, nil
}

// drainPipe splices exactly n bytes from pipe r to fd.
func drainPipe(r, fd, n int, calls *int64) error {
	for n > 0 {
		m, err := retry(func() (int, error) {
			m, err := unix.Splice(r, nil, fd, nil, n, unix.SPLICE_F_MOVE)
			return int(m), err
		})
		*calls++
		if err != nil {
			return fmt.Errorf("splice pipe->fd: %w", err)
		}
		if m == 0 {
			return fmt.Errorf("splice pipe->fd: wrote 0 of %d bytes", n)
		}
		n -= m
	}
	return nil
}
