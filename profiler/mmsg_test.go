package profiler

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sendmmsg and recvmmsg return how many messages they moved, not bytes:
// a path's bytes are the sum of the messages' msg_len. The receiver also
// passes MSG_TRUNC to some recvmmsg calls and to recvmsg calls between
// them: TCP discards those bytes uncopied, and the byte classes, which
// take each receive's copies from its flags, must tell them apart.

const mmsgEnv = "ZCPROF_TEST_MMSG"

type mmsgResult struct {
	SentBytes, RecvBytes uint64 // sums of msg_len as the kernel returned them
	SendCalls, RecvCalls uint64
	SentMsgs, RecvMsgs   uint64
	// Of RecvBytes, what calls with MSG_TRUNC returned (recvmmsg's and
	// recvmsg's).
	TruncBytes, RecvmsgTruncBytes uint64
}

func init() { childMode(mmsgEnv, "mmsg", runMmsgChild) }

// mmsg calls sendmmsg or recvmmsg (trap) on msgs and returns the messages
// moved and the sum of their msg_len.
func mmsg(trap uintptr, fd int, msgs []unix.Mmsghdr, flags int) (uint64, uint64, error) {
	n, _, errno := unix.Syscall6(trap, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), uintptr(flags), 0, 0)
	if errno != 0 {
		return 0, 0, errno
	}
	var bytes uint64
	for _, m := range msgs[:n] {
		bytes += uint64(m.Len)
	}
	return uint64(n), bytes, nil
}

// vector builds one mmsghdr per buffer.
func vector(bufs [][]byte) ([]unix.Mmsghdr, []unix.Iovec) {
	msgs := make([]unix.Mmsghdr, len(bufs))
	iovs := make([]unix.Iovec, len(bufs))
	for i, b := range bufs {
		iovs[i].Base = &b[0]
		iovs[i].SetLen(len(b))
		msgs[i].Hdr.Iov = &iovs[i]
		msgs[i].Hdr.Iovlen = 1
	}
	return msgs, iovs
}

func runMmsgChild(out string) error {
	runtime.LockOSThread()
	tx, rx, err := loopbackPair(unix.SOCK_STREAM)
	if err != nil {
		return err
	}
	var r mmsgResult
	payload := make([]byte, 64<<10)
	for round := range 20 {
		// Messages of different sizes, so that no count can pass for bytes.
		bufs := [][]byte{payload[:1000+round], payload[:7], payload[:20000], payload[:333]}
		msgs, iovs := vector(bufs)
		n, bytes, err := mmsg(unix.SYS_SENDMMSG, tx, msgs, 0)
		runtime.KeepAlive(iovs)
		if err != nil {
			return fmt.Errorf("sendmmsg: %w", err)
		}
		r.SendCalls++
		r.SentMsgs += n
		r.SentBytes += bytes
		for call := 0; r.RecvBytes < r.SentBytes; call++ {
			// By turns: recvmmsg, recvmsg with MSG_TRUNC, recvmmsg with
			// MSG_TRUNC (a round's 21 KB takes at least two calls).
			flags := unix.MSG_DONTWAIT
			if call%3 == 2 {
				flags |= unix.MSG_TRUNC
			}
			if call%3 == 1 {
				// recvmsg takes its flags in another argument.
				n, _, _, _, err := unix.Recvmsg(rx, make([]byte, 1500), nil, unix.MSG_DONTWAIT|unix.MSG_TRUNC)
				r.RecvCalls++
				if err == unix.EAGAIN {
					continue
				}
				if err != nil {
					return fmt.Errorf("recvmsg: %w", err)
				}
				r.RecvBytes += uint64(n)
				r.TruncBytes += uint64(n)
				r.RecvmsgTruncBytes += uint64(n)
				continue
			}
			rb := make([][]byte, 3)
			for i := range rb {
				rb[i] = make([]byte, 4096)
			}
			msgs, iovs := vector(rb)
			n, bytes, err := mmsg(unix.SYS_RECVMMSG, rx, msgs, flags)
			runtime.KeepAlive(iovs)
			r.RecvCalls++
			if err == unix.EAGAIN {
				continue
			}
			if err != nil {
				return fmt.Errorf("recvmmsg: %w", err)
			}
			r.RecvMsgs += n
			r.RecvBytes += bytes
			if flags&unix.MSG_TRUNC != 0 {
				r.TruncBytes += bytes
			}
		}
	}
	return writeResult(out, r)
}

func TestMmsgBytes(t *testing.T) {
	requireBPF(t)
	eachAccountingBackend(t, func(t *testing.T, backend string) {
		var r mmsgResult
		_, p := profileChildMode(t, mmsgEnv, ProfileOptions{Backend: backend}, &r)
		if r.SentBytes == 0 || r.RecvBytes != r.SentBytes || r.SentMsgs != 4*r.SendCalls || r.RecvmsgTruncBytes == 0 || r.TruncBytes == r.RecvmsgTruncBytes {
			t.Fatalf("child: %+v", r)
		}
		paths := p.Paths
		if got := findPath(paths, "tx.write"); got.Bytes != r.SentBytes || got.Calls != r.SendCalls {
			t.Errorf("tx.write: %d bytes in %d calls, the sendmmsg calls sent %d bytes (%d messages) in %d calls",
				got.Bytes, got.Calls, r.SentBytes, r.SentMsgs, r.SendCalls)
		}
		if got := findPath(paths, "rx.read"); got.Bytes != r.RecvBytes || got.Calls != r.RecvCalls {
			t.Errorf("rx.read: %d bytes in %d calls, the recvmmsg calls received %d bytes (%d messages) in %d calls",
				got.Bytes, got.Calls, r.RecvBytes, r.RecvMsgs, r.RecvCalls)
		}
		if zc := p.Zerocopy; zc == nil || zc.RxCopiedBytes != r.RecvBytes-r.TruncBytes || zc.RxDiscardedBytes != r.TruncBytes {
			t.Errorf("zero-copy %+v: want %d bytes copied, %d discarded (MSG_TRUNC: %d by recvmsg, the rest by recvmmsg)",
				zc, r.RecvBytes-r.TruncBytes, r.TruncBytes, r.RecvmsgTruncBytes)
		}
	})
}
