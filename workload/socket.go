package workload

import (
	"fmt"
	"net"
	"net/netip"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// zcMSS is the TCP_MAXSEG for TCP_ZEROCOPY_RECEIVE runs on one host (mss):
// 4096 bytes of payload plus 12 bytes of timestamp option, so every segment
// fills exactly one page and can be mapped
// (tools/testing/selftests/net/tcp_mmap.c).
const zcMSS = pageSize + 12

// acceptTimeout bounds accept() (SO_RCVTIMEO applies to accept), so a sender
// that failed to connect cannot hang Prepare.
const acceptTimeout = 10

// sockaddr is addr:port as the socket calls take it; family is its
// socket family.
func sockaddr(addr netip.Addr, port int) (sa unix.Sockaddr, family int) {
	addr = addr.Unmap()
	if addr.Is4() {
		return &unix.SockaddrInet4{Addr: addr.As4(), Port: port}, unix.AF_INET
	}
	in6 := &unix.SockaddrInet6{Addr: addr.As16(), Port: port}
	if zone := addr.Zone(); zone != "" { // a link-local address names its interface
		if ifc, err := net.InterfaceByName(zone); err == nil {
			in6.ZoneId = uint32(ifc.Index)
		}
	}
	return in6, unix.AF_INET6
}

// addrPort is the address and port of a socket address (IPv4-mapped IPv6
// addresses as IPv4); ok is false for other families.
func addrPort(sa unix.Sockaddr) (addr netip.Addr, port int, ok bool) {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrFrom4(a.Addr), a.Port, true
	case *unix.SockaddrInet6:
		return netip.AddrFrom16(a.Addr).Unmap(), a.Port, true
	}
	return netip.Addr{}, 0, false
}

// listenTCP opens a blocking listening socket on addr:port (0: an
// ephemeral port) and returns the port.
func listenTCP(addr netip.Addr, port, mss int) (fd, bound int, err error) {
	sa, family := sockaddr(addr, port)
	fd, err = unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
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
	if port > 0 {
		// A fixed data port is reused run after run; the last run's
		// connections may still be in TIME_WAIT.
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return fail("SO_REUSEADDR", err)
		}
	}
	if err := unix.Bind(fd, sa); err != nil {
		return fail("bind "+netip.AddrPortFrom(addr, uint16(port)).String(), err)
	}
	if err := unix.Listen(fd, 16); err != nil {
		return fail("listen", err)
	}
	got, err := unix.Getsockname(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	_, bound, _ = addrPort(got)
	return fd, bound, nil
}

// acceptTCP accepts one connection as a blocking fd. With a valid from,
// connections from any other address are closed unread (a two-host
// receiver takes its stream only from the peer it was told about).
func acceptTCP(ln int, from netip.Addr) (int, error) {
	deadline := time.Now().Add(acceptTimeout * time.Second)
	from = from.Unmap()
	for {
		fd, sa, err := unix.Accept4(ln, unix.SOCK_CLOEXEC)
		if err == nil && from.IsValid() {
			if a, _, ok := addrPort(sa); !ok || a != from {
				unix.Close(fd)
				if time.Now().After(deadline) {
					return -1, fmt.Errorf("accept: no connection from %s within %ds", from, acceptTimeout)
				}
				continue
			}
		}
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

// connectedMSS is a connected socket's MSS as the handshake settled it
// (tp->mss_cache): at most the TCP_MAXSEG asked for, less where the peer's
// or the route's limits are lower.
func connectedMSS(fd int) (int, error) {
	mss, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_MAXSEG)
	if err != nil {
		return 0, fmt.Errorf("TCP_MAXSEG: %w", err)
	}
	return mss, nil
}

// dialTCP connects a blocking socket to addr:port. setup runs before
// connect (socket options that must precede the handshake).
func dialTCP(addr netip.Addr, port, mss int, setup func(fd int) error) (int, error) {
	sa, family := sockaddr(addr, port)
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
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
		err = unix.Connect(fd, sa)
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
