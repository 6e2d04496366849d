package workload

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tcpZerocopyReceive is struct tcp_zerocopy_receive from
// include/uapi/linux/tcp.h (6.18, 64 bytes). The kernel accepts any length
// from offsetofend(length) up, zero-filling what an older caller omits.
type tcpZerocopyReceive struct {
	Address        uint64 // in: start of our mapping of the socket
	Length         uint32 // in: bytes to map; out: bytes mapped
	RecvSkipHint   uint32 // out: bytes that must be read with recv()
	Inq            uint32 // out: bytes left in the receive queue
	Err            int32  // out: pending socket error
	CopybufAddress uint64 // in: buffer for data that cannot be mapped
	CopybufLen     int32  // in: its size; out: bytes copied (or -errno)
	Flags          uint32
	MsgControl     uint64
	MsgControllen  uint64
	MsgFlags       uint32
	Reserved       uint32
}

// zcCopybuf is deliberately one page: when inq <= copybuf_len the kernel
// copies the whole queue instead of mapping anything (docs/architecture.md), so a
// large copybuf would turn every call into a copy.
const zcCopybuf = pageSize

// zerocopyRx: TCP_ZEROCOPY_RECEIVE. The socket fd is mmap'ed read-only;
// each getsockopt maps whole page-sized frags into that window (zapping
// the previous call's pages), copies small remainders into copybuf, and
// leaves recv_skip_hint bytes (unaligned or unmappable data: compound or
// page-cache pages, as write() and sendfile produce) to a normal recv().
type zerocopyRx struct {
	mem     []byte
	copybuf []byte
	buf     []byte
	polled  bool
	lastInq uint32 // zc.inq of the previous call: bytes still queued
	// waitFirst: the previous call left less than a window queued, so the
	// next one waits for SO_RCVLOWAT first. Calling at once would map the
	// few whole pages that arrived meanwhile and copy their partial tail:
	// a receiver faster than its sender (seen under emulation) then copied
	// a third of the bytes.
	waitFirst bool
}

func newZerocopyRx(r *rxStream) (*zerocopyRx, error) {
	// Wake only when a full buffer is queued (or at EOF): fewer calls that
	// find just a page or two, which the copybuf fallback would copy.
	if err := unix.SetsockoptInt(r.fd, unix.SOL_SOCKET, unix.SO_RCVLOWAT, r.cfg.Size); err != nil {
		return nil, fmt.Errorf("SO_RCVLOWAT: %w", err)
	}
	mem, err := unix.Mmap(r.fd, 0, r.cfg.Size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap socket: %w", err)
	}
	return &zerocopyRx{mem: mem, copybuf: make([]byte, zcCopybuf), buf: make([]byte, r.cfg.Size)}, nil
}

func (m *zerocopyRx) step(r *rxStream) (int, error) {
	if m.waitFirst {
		m.waitFirst = false
		pollFd(r.fd, unix.POLLIN|unix.POLLRDHUP, -1)
	}
	for {
		zc := tcpZerocopyReceive{
			Address:        uint64(uintptr(unsafe.Pointer(&m.mem[0]))),
			Length:         uint32(len(m.mem)),
			CopybufAddress: uint64(uintptr(unsafe.Pointer(&m.copybuf[0]))),
			CopybufLen:     int32(m.copybufLen()),
		}
		zlen := uint32(unsafe.Sizeof(zc))
		r.res.RecvCalls++
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(r.fd), unix.IPPROTO_TCP, unix.TCP_ZEROCOPY_RECEIVE,
			uintptr(unsafe.Pointer(&zc)), uintptr(unsafe.Pointer(&zlen)), 0)
		if errno == unix.EINTR {
			continue
		}
		if errno == unix.EIO {
			// The kernel's way of saying EOF: empty queue and SOCK_DONE.
			// Confirm with a recv, which returns 0 at EOF.
			got, err := m.recv(r, 0, len(m.buf), unix.MSG_DONTWAIT)
			if err == unix.EAGAIN {
				return 0, fmt.Errorf("getsockopt(TCP_ZEROCOPY_RECEIVE): EIO before EOF")
			}
			return got, err
		}
		if errno != 0 {
			return 0, fmt.Errorf("getsockopt(TCP_ZEROCOPY_RECEIVE): %w", errno)
		}
		if zc.Err != 0 {
			return 0, fmt.Errorf("TCP_ZEROCOPY_RECEIVE: socket error %w", unix.Errno(zc.Err))
		}
		if zc.CopybufLen < 0 {
			return 0, fmt.Errorf("TCP_ZEROCOPY_RECEIVE copybuf: %w", unix.Errno(-zc.CopybufLen))
		}
		m.lastInq = zc.Inq
		n := 0
		if zc.Length > 0 {
			r.verify(n, m.mem[:zc.Length])
			r.res.RxMappedBytes += int64(zc.Length)
			n += int(zc.Length)
		}
		if zc.CopybufLen > 0 {
			r.verify(n, m.copybuf[:zc.CopybufLen])
			r.res.RxCopiedBytes += int64(zc.CopybufLen)
			n += int(zc.CopybufLen)
		}
		if zc.RecvSkipHint > 0 {
			got, err := m.recv(r, n, int(zc.RecvSkipHint), 0)
			if err != nil {
				return 0, err
			}
			n += got
		}
		if n > 0 {
			m.polled = false
			m.waitFirst = zc.Inq < uint32(len(m.mem))
			return n, nil
		}
		// Nothing queued. getsockopt never blocks: wait for data, and if
		// the socket is readable but still empty, a recv tells EOF apart.
		if !m.polled {
			m.polled = true
			pollFd(r.fd, unix.POLLIN|unix.POLLRDHUP, -1)
			continue
		}
		m.polled = false
		got, err := m.recv(r, 0, len(m.buf), unix.MSG_DONTWAIT)
		if err == unix.EAGAIN {
			continue
		}
		return got, err // 0 = EOF
	}
}

// recv copies up to want bytes with recv(), counting them as copied.
func (m *zerocopyRx) recv(r *rxStream, skip, want, flags int) (int, error) {
	want = min(want, len(m.buf))
	r.res.RecvCalls++
	got, err := retry(func() (int, error) { return recvfrom(r.fd, unsafe.Pointer(&m.buf[0]), want, flags) })
	if err == unix.EAGAIN && flags&unix.MSG_DONTWAIT != 0 {
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("recv after TCP_ZEROCOPY_RECEIVE: %w", err)
	}
	r.verify(skip, m.buf[:got])
	r.res.RxCopiedBytes += int64(got)
	return got, nil
}

func (m *zerocopyRx) close() {
	if m.mem != nil {
		unix.Munmap(m.mem)
		m.mem = nil
	}
}

// copybufLen offers the copybuf only when the last call left less than a
// window queued. After mapping a full window the kernel copies up to
// copybuf_len bytes of the skb it stopped in (tcp_zc_handle_leftover),
// which with a backlog costs about a page of copying per call.
func (m *zerocopyRx) copybufLen() int {
	if m.lastInq >= uint32(len(m.mem)) {
		return 0
	}
	return len(m.copybuf)
}
