package workload

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// sendfileTx: sendfile(2) from the payload file, looping over it. The
// kernel moves page-cache page references into the skbs (no TX copy) in
// chunks of at most 64 KiB (its private pipe has 16 slots).
type sendfileTx struct {
	noFinish
	file int
}

func openPayload(s *txStream) (int, error) {
	fd, err := unix.Open(s.file, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open payload: %w", err)
	}
	return fd, nil
}

func newSendfileTx(s *txStream) (*sendfileTx, error) {
	fd, err := openPayload(s)
	if err != nil {
		return nil, err
	}
	return &sendfileTx{file: fd}, nil
}

func (m *sendfileTx) step(s *txStream, want int) (int, error) {
	foff := s.off % fileLen
	count := min(want, int(fileLen-foff))
	s.res.SendCalls++
	n, err := retry(func() (int, error) { return unix.Sendfile(s.fd, m.file, &foff, count) })
	if err != nil {
		return 0, fmt.Errorf("sendfile: %w", err)
	}
	return n, nil
}

func (m *sendfileTx) close() { unix.Close(m.file) }

// spliceTx: splice(file -> pipe) then splice(pipe -> socket).
type spliceTx struct {
	noFinish
	file, pr, pw, capacity int
}

func newSpliceTx(s *txStream) (*spliceTx, error) {
	fd, err := openPayload(s)
	if err != nil {
		return nil, err
	}
	pr, pw, c, err := newPipe(s.cfg.Size)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &spliceTx{file: fd, pr: pr, pw: pw, capacity: c}, nil
}

func (m *spliceTx) step(s *txStream, want int) (int, error) {
	foff := s.off % fileLen
	count := min(want, int(fileLen-foff), m.capacity)
	s.res.SendCalls++
	n, err := retry(func() (int, error) {
		n, err := unix.Splice(m.file, &foff, m.pw, nil, count, unix.SPLICE_F_MOVE)
		return int(n), err
	})
	if err != nil {
		return 0, fmt.Errorf("splice file->pipe: %w", err)
	}
	if err := drainPipe(m.pr, s.fd, n, &s.res.SendCalls); err != nil {
		return 0, err
	}
	return n, nil
}

func (m *spliceTx) close() {
	unix.Close(m.file)
	unix.Close(m.pr)
	unix.Close(m.pw)
}

// vmspliceTx: vmsplice(user buffer -> pipe) then splice(pipe -> socket).
// The user pages travel by reference with no completion signal; that is
// safe here only because the pattern buffer is never modified.
type vmspliceTx struct {
	noFinish
	pr, pw, capacity int
}

func newVmspliceTx(s *txStream) (*vmspliceTx, error) {
	pr, pw, c, err := newPipe(s.cfg.Size)
	if err != nil {
		return nil, err
	}
	return &vmspliceTx{pr: pr, pw: pw, capacity: c}, nil
}

func (m *vmspliceTx) step(s *txStream, want int) (int, error) {
	// More than the pipe holds would block vmsplice before we drain it.
	p := s.pat.at(s.off, min(want, m.capacity))
	iov := []unix.Iovec{{Base: &p[0]}}
	iov[0].SetLen(len(p))
	s.res.SendCalls++
	n, err := retry(func() (int, error) { return unix.Vmsplice(m.pw, iov, 0) })
	if err != nil {
		return 0, fmt.Errorf("vmsplice: %w", err)
	}
	if err := drainPipe(m.pr, s.fd, n, &s.res.SendCalls); err != nil {
		return 0, err
	}
	return n, nil
}

func (m *vmspliceTx) close() {
	unix.Close(m.pr)
	unix.Close(m.pw)
}
