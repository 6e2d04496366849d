package workload

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	// drainEvery bounds the notifications left queued on the error queue;
	// they are charged to the socket and exhaust optmem (ENOBUFS) if ignored.
	drainEvery = 16
	// completionWait bounds the wait for the last notifications.
	completionWait = 10 * time.Second
)

// msgZerocopyTx: send(MSG_ZEROCOPY) with SO_ZEROCOPY set. Each successful
// call consumes one notification id (the kernel's sk_zckey), so the
// expected completions equal the successful sends. Without SO_ZEROCOPY the
// flag is ignored: a silent copy and no notifications at all.
type msgZerocopyTx struct {
	sockZC     bool
	sends      int64
	sinceDrain int
	dummy      [1]byte
	oob        []byte
}

func newMsgZerocopyTx(s *txStream) (*msgZerocopyTx, error) {
	m := &msgZerocopyTx{sockZC: !s.cfg.NoSockZerocopy, oob: make([]byte, 256)}
	if m.sockZC {
		if err := unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_ZEROCOPY, 1); err != nil {
			return nil, fmt.Errorf("SO_ZEROCOPY: %w", err)
		}
	}
	return m, nil
}

func (m *msgZerocopyTx) step(s *txStream, want int) (int, error) {
	p := s.pat.at(s.off, want)
	for {
		s.res.SendCalls++
		n, err := sendto(s.fd, p, unix.MSG_ZEROCOPY|unix.MSG_NOSIGNAL)
		switch err {
		case nil:
			m.sends++
			if m.sinceDrain++; m.sinceDrain >= drainEvery {
				if err := m.drain(s); err != nil {
					return 0, err
				}
			}
			return n, nil
		case unix.EINTR:
		case unix.ENOBUFS:
			// optmem exhausted by pending notifications: reap, wait a bit
			// for completions if none were queued, then retry.
			before := s.res.ZCNotifications
			if err := m.drain(s); err != nil {
				return 0, err
			}
			if s.res.ZCNotifications == before {
				pollFd(s.fd, 0, 10)
			}
		default:
			return 0, fmt.Errorf("send(MSG_ZEROCOPY): %w", err)
		}
	}
}

// drain reads every queued error-queue message without blocking.
func (m *msgZerocopyTx) drain(s *txStream) error {
	m.sinceDrain = 0
	for {
		// A 1-byte iovec keeps x/sys from probing SO_TYPE on every call.
		_, oobn, _, _, err := unix.Recvmsg(s.fd, m.dummy[:], m.oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		switch err {
		case nil:
		case unix.EAGAIN:
			return nil
		case unix.EINTR:
			continue
		default:
			return fmt.Errorf("recvmsg(MSG_ERRQUEUE): %w", err)
		}
		s.res.ZCNotifications++
		if err := countZerocopyNotification(m.oob[:oobn], &s.res); err != nil {
			return err
		}
	}
}

// countZerocopyNotification adds the range [ee_info, ee_data] of a
// SO_EE_ORIGIN_ZEROCOPY message. Ranges of adjacent completions are merged
// by the kernel, and a merged range keeps the first message's ee_code.
func countZerocopyNotification(oob []byte, res *StreamResult) error {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return fmt.Errorf("error queue cmsg: %w", err)
	}
	for _, c := range msgs {
		if !(c.Header.Level == unix.SOL_IP && c.Header.Type == unix.IP_RECVERR) &&
			!(c.Header.Level == unix.SOL_IPV6 && c.Header.Type == unix.IPV6_RECVERR) {
			continue
		}
		if len(c.Data) < int(unsafe.Sizeof(unix.SockExtendedErr{})) {
			continue
		}
		ee := (*unix.SockExtendedErr)(unsafe.Pointer(&c.Data[0]))
		if ee.Origin != unix.SO_EE_ORIGIN_ZEROCOPY {
			return fmt.Errorf("error queue: errno %d origin %d", ee.Errno, ee.Origin)
		}
		n := int64(ee.Data-ee.Info) + 1 // u32 ids wrap
		res.ZCCompletions += n
		if ee.Code&unix.SO_EE_CODE_ZEROCOPY_COPIED != 0 {
			res.ZCCopied += n
		}
	}
	return nil
}

func (m *msgZerocopyTx) finish(s *txStream, abort *atomic.Bool) error {
	if !m.sockZC {
		return nil
	}
	deadline := time.Now().Add(completionWait)
	for s.res.ZCCompletions < m.sends {
		if abort.Load() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("msg_zerocopy: %d of %d sends never completed", m.sends-s.res.ZCCompletions, m.sends)
		}
		// POLLERR is always reported; no events need asking for.
		pollFd(s.fd, 0, 100)
		if err := m.drain(s); err != nil {
			return err
		}
	}
	return nil
}

func (m *msgZerocopyTx) close() {}

// pollFd waits up to ms milliseconds for events (or POLLERR/POLLHUP) on fd
// and returns the revents (0 on timeout or EINTR).
func pollFd(fd int, events int16, ms int) int16 {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
	n, err := unix.Poll(pfd, ms)
	if err != nil || n == 0 {
		return 0
	}
	return pfd[0].Revents
}
