package workload

import (
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/workload/iouring"
)

// uringTx: IORING_OP_SEND or IORING_OP_SEND_ZC at queue depth 1. One send
// in flight keeps the byte order trivially right (a send that hits EAGAIN
// is re-armed by poll, and a later SQE could overtake it) and makes SQEs
// equal sends. MSG_WAITALL makes io_uring retry short stream sends itself.
// For SEND_ZC the notification CQEs arrive later and are reaped as they come.
type uringTx struct {
	ring *iouring.Ring
	zc   bool
	seq  uint64
	more int64 // send CQEs with F_MORE: notifications owed
}

func newUringTx(s *txStream) (*uringTx, error) {
	// Queue depth is 1, but SEND_ZC notifications pile up while the
	// socket buffer holds unacked data; a roomy CQ avoids the overflow list.
	// Deferred task work keeps every retry of a send that hit EAGAIN inside
	// io_uring_enter, so its bytes and CPU are on tx.io_uring: by default
	// the kernel interrupts this thread to run it at whatever return to
	// user space comes next (once 49 KB of a run landed outside the path).
	r, err := iouring.NewWith(8, iouring.Options{CQEntries: 4096, DeferTaskrun: true})
	if err != nil {
		return nil, err
	}
	return &uringTx{ring: r, zc: s.cfg.Method == MethodIOUringZC}, nil
}

func (m *uringTx) step(s *txStream, want int) (int, error) {
	p := s.pat.at(s.off, want)
	sqe, err := m.ring.GetSQE()
	if err != nil {
		return 0, err
	}
	m.seq++
	flags := uint32(unix.MSG_WAITALL | unix.MSG_NOSIGNAL)
	if m.zc {
		iouring.PrepSendZC(sqe, s.fd, p, flags, true, m.seq)
	} else {
		iouring.PrepSend(sqe, s.fd, p, flags, m.seq)
	}
	s.res.SendCalls++
	if _, err := m.ring.Submit(1); err != nil {
		return 0, err
	}
	for {
		cqe, err := m.ring.WaitCQE()
		if err != nil {
			return 0, err
		}
		if cqe.Flags&iouring.CQEFNotif != 0 {
			m.notification(s, cqe)
			continue
		}
		if cqe.UserData != m.seq {
			return 0, fmt.Errorf("io_uring: completion for request %d, expected %d", cqe.UserData, m.seq)
		}
		if cqe.Flags&iouring.CQEFMore != 0 {
			m.more++
		}
		if cqe.Res < 0 {
			return 0, fmt.Errorf("io_uring send: %w", unix.Errno(-cqe.Res))
		}
		return int(cqe.Res), nil
	}
}

func (m *uringTx) notification(s *txStream, cqe iouring.CQE) {
	s.res.ZCNotifications++
	s.res.ZCCompletions++
	if uint32(cqe.Res)&iouring.NotifUsageZCCopied != 0 {
		s.res.ZCCopied++
	}
}

func (m *uringTx) finish(s *txStream, abort *atomic.Bool) error {
	deadline := time.Now().Add(completionWait)
	for s.res.ZCNotifications < m.more {
		// Notifications are posted from this thread's task work, which
		// the wait runs; it also moves overflowed completions into the ring.
		cqe, ok, err := m.ring.WaitCQETimeout(100 * time.Millisecond)
		if err != nil {
			return err
		}
		if ok {
			if cqe.Flags&iouring.CQEFNotif != 0 {
				m.notification(s, cqe)
			}
			continue
		}
		if abort.Load() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("io_uring_zc: %d notifications never arrived", m.more-s.res.ZCNotifications)
		}
	}
	return nil
}

func (m *uringTx) close() { m.ring.Close() }
