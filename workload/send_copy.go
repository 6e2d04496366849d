package workload

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// writeTx: write(2) from a user buffer (copied in tcp_sendmsg_locked).
type writeTx struct{ noFinish }

func (writeTx) step(s *txStream, want int) (int, error) {
	p := s.pat.at(s.off, want)
	s.res.SendCalls++
	n, err := retry(func() (int, error) { return unix.Write(s.fd, p) })
	if err != nil {
		return 0, fmt.Errorf("write: %w", err)
	}
	return n, nil
}

// sendTx: send(2), i.e. sendto without an address.
type sendTx struct{ noFinish }

func (sendTx) step(s *txStream, want int) (int, error) {
	p := s.pat.at(s.off, want)
	s.res.SendCalls++
	n, err := retry(func() (int, error) { return sendto(s.fd, p, unix.MSG_NOSIGNAL) })
	if err != nil {
		return 0, fmt.Errorf("send: %w", err)
	}
	return n, nil
}

// writevTx: writev(2) with the message split over two iovecs.
type writevTx struct{ noFinish }

func (writevTx) step(s *txStream, want int) (int, error) {
	p := s.pat.at(s.off, want)
	iov := [][]byte{p}
	if len(p) >= 2 {
		iov = [][]byte{p[:len(p)/2], p[len(p)/2:]}
	}
	s.res.SendCalls++
	n, err := retry(func() (int, error) { return unix.Writev(s.fd, iov) })
	if err != nil {
		return 0, fmt.Errorf("writev: %w", err)
	}
	return n, nil
}

// mmapTx: write(2) from a shared read-only mapping of the payload file, so
// the copy source is page cache (page faults on a cold cache).
type mmapTx struct {
	noFinish
	mem []byte
}

func newMmapTx(s *txStream) (*mmapTx, error) {
	f, err := os.Open(s.file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	mem, err := unix.Mmap(int(f.Fd()), 0, fileLen, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap payload: %w", err)
	}
	return &mmapTx{mem: mem}, nil
}

func (m *mmapTx) step(s *txStream, want int) (int, error) {
	foff := int(s.off % fileLen)
	p := m.mem[foff : foff+min(want, fileLen-foff)]
	s.res.SendCalls++
	n, err := retry(func() (int, error) { return unix.Write(s.fd, p) })
	if err != nil {
		return 0, fmt.Errorf("write from mmap: %w", err)
	}
	return n, nil
}

func (m *mmapTx) close() {
	if m.mem != nil {
		unix.Munmap(m.mem)
		m.mem = nil
	}
}
