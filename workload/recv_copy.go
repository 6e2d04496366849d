package workload

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// readRx: read(2) into a Size buffer; every chunk is checked against the
// pattern (bytes.Equal, i.e. memcmp, cheap next to the kernel's copy).
type readRx struct{ buf []byte }

func newReadRx(r *rxStream) *readRx { return &readRx{buf: make([]byte, r.cfg.Size)} }

func (m *readRx) step(r *rxStream) (int, error) {
	r.res.RecvCalls++
	n, err := retry(func() (int, error) { return unix.Read(r.fd, m.buf) })
	if err != nil {
		return 0, fmt.Errorf("read: %w", err)
	}
	r.verify(0, m.buf[:n])
	return n, nil
}

func (m *readRx) close() {}

// truncRx: recv(MSG_TRUNC) with a NULL buffer. TCP (unlike most stream
// sockets) honours MSG_TRUNC by discarding the bytes without copying them.
type truncRx struct{}

func (truncRx) step(r *rxStream) (int, error) {
	r.res.RecvCalls++
	n, err := retry(func() (int, error) { return recvfrom(r.fd, nil, r.cfg.Size, unix.MSG_TRUNC) })
	if err != nil {
		return 0, fmt.Errorf("recv(MSG_TRUNC): %w", err)
	}
	return n, nil
}

func (truncRx) close() {}
