package workload

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// spliceRx: splice(socket -> pipe) then splice(pipe -> /dev/null). Frags
// move by reference; the kernel copies only an skb's linear part.
type spliceRx struct {
	pr, pw, capacity, devnull int
}

func newSpliceRx(r *rxStream) (*spliceRx, error) {
	pr, pw, c, err := newPipe(r.cfg.Size)
	if err != nil {
		return nil, err
	}
	dn, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(pr)
		unix.Close(pw)
		return nil, fmt.Errorf("open /dev/null: %w", err)
	}
	return &spliceRx{pr: pr, pw: pw, capacity: c, devnull: dn}, nil
}

func (m *spliceRx) step(r *rxStream) (int, error) {
	r.res.RecvCalls++
	n, err := retry(func() (int, error) {
		n, err := unix.Splice(r.fd, nil, m.pw, nil, min(r.cfg.Size, m.capacity), unix.SPLICE_F_MOVE)
		return int(n), err
	})
	if err != nil {
		return 0, fmt.Errorf("splice socket->pipe: %w", err)
	}
	if err := drainPipe(m.pr, m.devnull, n, &r.res.RecvCalls); err != nil {
		return 0, err
	}
	return n, nil
}

func (m *spliceRx) close() {
	unix.Close(m.pr)
	unix.Close(m.pw)
	unix.Close(m.devnull)
}
