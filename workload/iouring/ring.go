package iouring

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrRingFull is returned by GetSQE when every SQ slot is pending.
var ErrRingFull = errors.New("io_uring: submission queue full")

// Ring is one io_uring instance. It is not safe for concurrent use: the
// intended user is a single locked OS thread.
type Ring struct {
	fd int

	sqMem, cqMem, sqeMem []byte

	sqHead, sqTail *uint32
	sqMask         uint32
	sqEntries      uint32
	sqArray        []uint32
	sqes           []SQE
	sqeTail        uint32 // next SQE slot handed out, not yet published

	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []CQE

	deferred bool
}

// Options shape a ring beyond its SQ size.
type Options struct {
	// CQEntries asks for at least this many CQ slots (IORING_SETUP_CQSIZE),
	// for users that leave many completions (e.g. SEND_ZC notifications)
	// queued; 0 keeps the kernel's twice the SQ.
	CQEntries uint32
	// DeferTaskrun keeps completion work (the poll-driven retry of a send
	// that hit EAGAIN, posting SEND_ZC notifications) inside io_uring_enter
	// with GETEVENTS on the creating thread (SINGLE_ISSUER|DEFER_TASKRUN).
	// By default the kernel runs it as task work at the thread's next return
	// to user space, from whatever syscall or interrupt that is, so a send's
	// bytes and CPU can land outside io_uring_enter. Kernels before 6.1
	// refuse the flags; the ring then falls back to the default (Deferred
	// says which it got). Only the creating thread may then enter the ring.
	DeferTaskrun bool
}

func setup(entries uint32, p *params) (int, error) {
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// New creates a ring with at least entries SQ slots (the kernel rounds up
// to a power of two; the CQ ring gets twice as many).
func New(entries uint32) (*Ring, error) { return NewWith(entries, Options{}) }

// NewWith is New shaped by o.
func NewWith(entries uint32, o Options) (*Ring, error) {
	var p params
	if o.CQEntries > 0 {
		p.Flags |= setupCQSize
		p.CQEntries = o.CQEntries
	}
	base := p
	if o.DeferTaskrun {
		p.Flags |= setupSingleIss | setupDeferTask
	}
	fd, err := setup(entries, &p)
	if err == unix.EINVAL && o.DeferTaskrun {
		p = base
		fd, err = setup(entries, &p)
	}
	if err != nil {
		return nil, fmt.Errorf("io_uring_setup: %w", err)
	}
	r := &Ring{fd: fd, deferred: p.Flags&setupDeferTask != 0}
	if err := r.mapRings(&p); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Ring) mapRings(p *params) error {
	sqSize := int(p.SQOff.Array) + int(p.SQEntries)*4
	cqSize := int(p.CQOff.CQEs) + int(p.CQEntries)*int(unsafe.Sizeof(CQE{}))
	single := p.Features&featSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	prot, flags := unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE
	if r.sqMem, err = unix.Mmap(r.fd, offSQRing, sqSize, prot, flags); err != nil {
		return fmt.Errorf("mmap sq ring: %w", err)
	}
	if single {
		r.cqMem = r.sqMem
	} else if r.cqMem, err = unix.Mmap(r.fd, offCQRing, cqSize, prot, flags); err != nil {
		return fmt.Errorf("mmap cq ring: %w", err)
	}
	sqeSize := int(p.SQEntries) * int(unsafe.Sizeof(SQE{}))
	if r.sqeMem, err = unix.Mmap(r.fd, offSQEs, sqeSize, prot, flags); err != nil {
		return fmt.Errorf("mmap sqes: %w", err)
	}

	u32 := func(mem []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	r.sqHead = u32(r.sqMem, p.SQOff.Head)
	r.sqTail = u32(r.sqMem, p.SQOff.Tail)
	r.sqMask = *u32(r.sqMem, p.SQOff.RingMask)
	r.sqEntries = *u32(r.sqMem, p.SQOff.RingEntries)
	r.sqArray = unsafe.Slice(u32(r.sqMem, p.SQOff.Array), p.SQEntries)
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&r.sqeMem[0])), p.SQEntries)
	r.sqeTail = atomic.LoadUint32(r.sqTail)

	r.cqHead = u32(r.cqMem, p.CQOff.Head)
	r.cqTail = u32(r.cqMem, p.CQOff.Tail)
	r.cqMask = *u32(r.cqMem, p.CQOff.RingMask)
	r.cqes = unsafe.Slice((*CQE)(unsafe.Pointer(&r.cqMem[p.CQOff.CQEs])), p.CQEntries)
	return nil
}

// Deferred reports whether completion work runs only inside io_uring_enter
// (Options.DeferTaskrun was asked for and the kernel took it).
func (r *Ring) Deferred() bool { return r.deferred }

// SQEntries and CQEntries report the ring sizes the kernel chose.
func (r *Ring) SQEntries() uint32 { return r.sqEntries }
func (r *Ring) CQEntries() uint32 { return uint32(len(r.cqes)) }

// GetSQE returns a zeroed SQE slot, or ErrRingFull when all slots are taken
// by SQEs the kernel has not consumed yet.
func (r *Ring) GetSQE() (*SQE, error) {
	head := atomic.LoadUint32(r.sqHead)
	if r.sqeTail-head >= r.sqEntries {
		return nil, ErrRingFull
	}
	idx := r.sqeTail & r.sqMask
	r.sqArray[idx] = idx
	sqe := &r.sqes[idx]
	*sqe = SQE{}
	r.sqeTail++
	return sqe, nil
}

// Submit publishes every SQE obtained from GetSQE and enters the kernel,
// waiting for at least waitNr completions. It returns the number of SQEs the
// kernel consumed. EINTR is retried.
func (r *Ring) Submit(waitNr uint32) (int, error) {
	// Store-release of the tail makes the SQE contents visible to the kernel.
	atomic.StoreUint32(r.sqTail, r.sqeTail)
	total := 0
	for {
		toSubmit := r.sqeTail - atomic.LoadUint32(r.sqHead)
		var flags uintptr
		if waitNr > 0 {
			flags = enterGetEvents
		}
		n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(waitNr), flags, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return total, fmt.Errorf("io_uring_enter: %w", errno)
		}
		total += int(n)
		return total, nil
	}
}

// PeekCQE returns the oldest unread completion without waiting.
func (r *Ring) PeekCQE() (CQE, bool) {
	head := atomic.LoadUint32(r.cqHead)
	// Load-acquire of the tail orders the CQE reads after it.
	if head == atomic.LoadUint32(r.cqTail) {
		return CQE{}, false
	}
	cqe := r.cqes[head&r.cqMask]
	atomic.StoreUint32(r.cqHead, head+1)
	return cqe, true
}

// WaitCQE returns the oldest completion, entering the kernel to wait if the
// CQ ring is empty (and submitting anything still pending).
func (r *Ring) WaitCQE() (CQE, error) {
	for {
		if c, ok := r.PeekCQE(); ok {
			return c, nil
		}
		if _, err := r.Submit(1); err != nil {
			return CQE{}, err
		}
	}
}

// WaitCQETimeout is WaitCQE that gives up after d (ok false), for callers
// that must notice an abort. Unlike poll(2) on the ring fd, it runs
// deferred task work while it waits, and entering the kernel moves
// completions parked on the overflow list (CQ ring was full) into the ring.
func (r *Ring) WaitCQETimeout(d time.Duration) (c CQE, ok bool, err error) {
	if c, ok := r.PeekCQE(); ok {
		return c, true, nil
	}
	// On the heap, which Go never moves: the kernel gets its address as an
	// integer.
	ts := new(unix.Timespec)
	*ts = unix.NsecToTimespec(d.Nanoseconds())
	arg := &geteventsArg{Ts: uint64(uintptr(unsafe.Pointer(ts)))}
	defer runtime.KeepAlive(ts)
	for {
		_, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), 0, 1,
			enterGetEvents|enterExtArg, uintptr(unsafe.Pointer(arg)), unsafe.Sizeof(*arg))
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 && errno != unix.ETIME {
			return CQE{}, false, fmt.Errorf("io_uring_enter: %w", errno)
		}
		c, ok := r.PeekCQE()
		return c, ok, nil
	}
}

// Ready is the number of completions waiting in the CQ ring.
func (r *Ring) Ready() uint32 {
	return atomic.LoadUint32(r.cqTail) - atomic.LoadUint32(r.cqHead)
}

// Close unmaps the rings and closes the ring fd. Idempotent.
func (r *Ring) Close() error {
	if r.sqeMem != nil {
		unix.Munmap(r.sqeMem)
		r.sqeMem = nil
	}
	if r.cqMem != nil && len(r.cqMem) > 0 && (r.sqMem == nil || &r.cqMem[0] != &r.sqMem[0]) {
		unix.Munmap(r.cqMem)
	}
	r.cqMem = nil
	if r.sqMem != nil {
		unix.Munmap(r.sqMem)
		r.sqMem = nil
	}
	if r.fd >= 0 {
		err := unix.Close(r.fd)
		r.fd = -1
		return err
	}
	return nil
}

// Fd is the ring's file descriptor (pollable: POLLIN when CQEs are ready).
func (r *Ring) Fd() int { return r.fd }
