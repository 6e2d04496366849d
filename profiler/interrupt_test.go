package profiler

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A signal that lands in a blocked recv ends the call with -ERESTARTSYS at
// sys_exit. With SA_RESTART (every handler Go installs) the kernel enters
// the same call again, and the user sees one call; without it the call
// returns EINTR, once. Each counts as one call, as the program sees it.

const (
	interruptEnv     = "ZCPROF_TEST_INTERRUPT"      // the result file
	interruptModeEnv = "ZCPROF_TEST_INTERRUPT_MODE" // "restart" or "eintr"
)

type interruptResult struct {
	RecvCalls   uint64 // every recv that returned, EINTR included
	Interrupted uint64 // of which returned EINTR
	Received    uint64
	Signals     uint64
}

func init() { childMode(interruptEnv, "interrupt", runInterruptChild) }

// kernelSigaction is x86_64's struct sigaction as rt_sigaction takes it.
type kernelSigaction struct {
	handler, flags, restorer, mask uint64
}

const saRestart = 0x10000000

// withoutSARestart clears SA_RESTART from the handler Go installed for sig,
// keeping Go's handler: a blocked call it interrupts then returns EINTR.
func withoutSARestart(sig unix.Signal) error {
	var act kernelSigaction
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&act)), 8, 0, 0); e != 0 {
		return fmt.Errorf("rt_sigaction read: %w", e)
	}
	if act.flags&saRestart == 0 {
		return fmt.Errorf("handler of %v has no SA_RESTART to clear (flags %#x)", sig, act.flags)
	}
	act.flags &^= saRestart
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); e != 0 {
		return fmt.Errorf("rt_sigaction write: %w", e)
	}
	return nil
}

// runInterruptChild receives on one locked thread from a sender that
// writes 1 KiB every 5 ms, while another thread sends that receiving
// thread SIGURG (which Go's runtime ignores when no preemption is asked)
// every millisecond.
func runInterruptChild(out string) error {
	mode := os.Getenv(interruptModeEnv)
	runtime.LockOSThread()
	if mode == "eintr" {
		if err := withoutSARestart(unix.SIGURG); err != nil {
			return err
		}
	}
	tx, rx, err := loopbackPair(unix.SOCK_STREAM)
	if err != nil {
		return err
	}
	const chunk, chunks = 1024, 200
	sent := make(chan error, 1)
	go func() {
		buf := make([]byte, chunk)
		for range chunks {
			time.Sleep(5 * time.Millisecond)
			if _, err := unix.Write(tx, buf); err != nil {
				sent <- err
				return
			}
		}
		sent <- unix.Shutdown(tx, unix.SHUT_WR)
	}()
	var r interruptResult
	var stop atomic.Bool
	pid, tid := unix.Getpid(), unix.Gettid()
	signalled := make(chan struct{})
	go func() {
		defer close(signalled)
		for !stop.Load() {
			time.Sleep(time.Millisecond)
			if unix.Tgkill(pid, tid, unix.SIGURG) == nil {
				atomic.AddUint64(&r.Signals, 1)
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, _, err := unix.Recvfrom(rx, buf, 0)
		r.RecvCalls++
		if err == unix.EINTR {
			r.Interrupted++
			continue
		}
		if err != nil {
			return fmt.Errorf("recv: %w", err)
		}
		if n == 0 {
			break
		}
		r.Received += uint64(n)
	}
	stop.Store(true)
	<-signalled
	if err := <-sent; err != nil {
		return fmt.Errorf("send: %w", err)
	}
	if r.Received != chunk*chunks {
		return fmt.Errorf("received %d bytes, want %d", r.Received, chunk*chunks)
	}
	return writeResult(out, r)
}

// TestInterruptedCallsCountOnce: a recv interrupted by signals is one call
// however often the kernel restarts it, and one call each time it returns
// EINTR.
func TestInterruptedCallsCountOnce(t *testing.T) {
	requireBPF(t)
	eachAccountingBackend(t, func(t *testing.T, backend string) {
		for _, mode := range []string{"restart", "eintr"} {
			t.Run(mode, func(t *testing.T) {
				t.Setenv(interruptModeEnv, mode)
				var r interruptResult
				_, p := profileChildMode(t, interruptEnv, ProfileOptions{Backend: backend}, &r)
				t.Logf("child: %+v", r)
				if r.Signals == 0 {
					t.Fatal("no signal was sent")
				}
				// The signals of both modes come on the same schedule:
				// EINTRs show that it lands in blocked recvs.
				if mode == "eintr" && r.Interrupted == 0 {
					t.Fatalf("none of %d signals interrupted a recv", r.Signals)
				}
				if mode == "restart" && r.Interrupted != 0 {
					t.Fatalf("%d recvs returned EINTR under SA_RESTART", r.Interrupted)
				}
				if got := findPath(p.Paths, "rx.read"); got.Calls != r.RecvCalls || got.Bytes != r.Received {
					t.Errorf("rx.read: %d bytes in %d calls, the child received %d in %d calls (%d returned EINTR)",
						got.Bytes, got.Calls, r.Received, r.RecvCalls, r.Interrupted)
				}
			})
		}
	})
}
