package workload

import (
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// txMethod is one send path. step sends up to want pattern bytes starting
// at stream offset s.off and returns how many the kernel accepted.
type txMethod interface {
	step(s *txStream, want int) (int, error)
	// finish waits for anything still owed (zero-copy completions) before
	// the FIN; it gives up when abort is set (cancelled run).
	finish(s *txStream, abort *atomic.Bool) error
	close()
}

// rxMethod is one receive path. step consumes the next chunk at r.off and
// returns its length; 0 means EOF.
type rxMethod interface {
	step(r *rxStream) (int, error)
	close()
}

type txStream struct {
	cfg  Config
	fd   int
	file string // payload file, for file-backed methods
	off  int64
	pat  pattern
	res  StreamResult
}

type rxStream struct {
	cfg Config
	fd  int
	off int64
	pat pattern
	res StreamResult
}

// noFinish is for methods with nothing outstanding after the last call.
type noFinish struct{}

func (noFinish) finish(*txStream, *atomic.Bool) error { return nil }
func (noFinish) close()                               {}

func newTxMethod(s *txStream) (txMethod, error) {
	switch s.cfg.Method {
	case MethodWrite:
		return writeTx{}, nil
	case MethodSend:
		return sendTx{}, nil
	case MethodWritev:
		return writevTx{}, nil
	case MethodMmap:
		return newMmapTx(s)
	case MethodMsgZerocopy:
		return newMsgZerocopyTx(s)
	case MethodSendfile:
		return newSendfileTx(s)
	case MethodSplice:
		return newSpliceTx(s)
	case MethodVmsplice:
		return newVmspliceTx(s)
	case MethodIOUring, MethodIOUringZC:
		return newUringTx(s)
	}
	return nil, fmt.Errorf("unknown method %q", s.cfg.Method)
}

func newRxMethod(r *rxStream) (rxMethod, error) {
	switch r.cfg.RxMethod {
	case RxRead:
		return newReadRx(r), nil
	case RxTrunc:
		return truncRx{}, nil
	case RxSplice:
		return newSpliceRx(r)
	case RxZerocopy:
		return newZerocopyRx(r)
	}
	return nil, fmt.Errorf("unknown rx method %q", r.cfg.RxMethod)
}

// runCtl is shared by all threads of one Run. stop ends sending (deadline
// or cancel); abort (cancel only) also skips waiting for completions.
type runCtl struct {
	limit       int64
	stop, abort atomic.Bool
}

// run sends until limit bytes (if > 0) or until stop, waits for
// completions, then half-closes so the receiver sees EOF.
func (s *txStream) run(m txMethod, ctl *runCtl) error {
	limit := ctl.limit
	for limit <= 0 || s.off < limit {
		if ctl.stop.Load() {
			break
		}
		want := s.cfg.Size
		if limit > 0 {
			want = int(min(int64(want), limit-s.off))
		}
		n, err := m.step(s, want)
		if err != nil {
			return err
		}
		s.off += int64(n)
		s.res.SentBytes += int64(n)
	}
	if err := m.finish(s, &ctl.abort); err != nil {
		return err
	}
	if err := unix.Shutdown(s.fd, unix.SHUT_WR); err != nil {
		return fmt.Errorf("shutdown(SHUT_WR): %w", err)
	}
	return nil
}

// run receives until EOF.
func (r *rxStream) run(m rxMethod) error {
	for {
		n, err := m.step(r)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		r.off += int64(n)
		r.res.ReceivedBytes += int64(n)
	}
}

// verify counts a mismatching chunk at r.off+skip.
func (r *rxStream) verify(skip int, b []byte) {
	if !r.pat.check(r.off+int64(skip), b) {
		r.res.PayloadErrors++
	}
}
