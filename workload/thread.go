package workload

import (
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Role says which side of a stream a thread serves.
type Role string

const (
	RoleSender   Role = "sender"
	RoleReceiver Role = "receiver"
)

// Thread identifies one worker OS thread.
type Thread struct {
	Role   Role
	Stream int
	TID    int
	// Cookie is the SO_COOKIE of the thread's connected socket, so that
	// kernel events on that socket can be told apart by owner.
	Cookie uint64
}

// worker is one locked OS thread. It is set up once, then parks between
// commands: a *runCtl on cmd runs one transfer, a close of quit ends it.
type worker struct {
	Thread
	cmd    chan *runCtl
	quit   chan struct{}
	exited chan struct{}

	mu sync.Mutex
	fd int // the socket (or, while accepting, the listener); -1 once closed
}

type workerDone struct {
	w   *worker
	res StreamResult
	end time.Time
	err error
}

func newWorker(role Role, stream int) *worker {
	return &worker{
		Thread: Thread{Role: role, Stream: stream},
		cmd:    make(chan *runCtl, 1),
		quit:   make(chan struct{}),
		exited: make(chan struct{}),
		fd:     -1,
	}
}

// lockThread binds the goroutine to its OS thread for good and prepares the
// thread. It never unlocks: a thread that was pinned or moved into another
// network namespace must not go back to the runtime's pool, and a goroutine
// that exits while locked makes the runtime terminate its thread.
func (w *worker) lockThread(cpu int, ep endpoint) error {
	runtime.LockOSThread()
	w.TID = unix.Gettid()
	name := fmt.Sprintf("zcprof-%s%d", w.Role[:2], w.Stream)
	b := append([]byte(name), 0)
	unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&b[0])), 0, 0, 0)
	if cpu >= 0 {
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("%s %d: pin to cpu %d: %w", w.Role, w.Stream, cpu, err)
		}
	}
	if err := ep.enter(); err != nil {
		return fmt.Errorf("%s %d: %w", w.Role, w.Stream, err)
	}
	return nil
}

func (w *worker) setFd(fd int) {
	w.mu.Lock()
	w.fd = fd
	w.mu.Unlock()
}

// shutdown unblocks any call the thread is stuck in on its socket (send,
// recv, poll, accept, io_uring poll-armed sends). Safe from any goroutine.
func (w *worker) shutdown() {
	w.mu.Lock()
	if w.fd >= 0 {
		unix.Shutdown(w.fd, unix.SHUT_RDWR)
	}
	w.mu.Unlock()
}

func (w *worker) closeFd() {
	w.mu.Lock()
	if w.fd >= 0 {
		unix.Close(w.fd)
		w.fd = -1
	}
	w.mu.Unlock()
}

// park serves run commands until quit, then releases everything.
func (w *worker) park(run func(*runCtl) (StreamResult, error), done chan<- workerDone, cleanup func()) {
	for {
		select {
		case ctl := <-w.cmd:
			res, err := run(ctl)
			done <- workerDone{w: w, res: res, end: time.Now(), err: err}
		case <-w.quit:
			cleanup()
			w.closeFd()
			close(w.exited)
			return
		}
	}
}
