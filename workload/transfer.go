package workload

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

const (
	setupTimeout = 15 * time.Second
	stopGrace    = 5 * time.Second
)

// Transfer is a prepared set of streams whose threads wait for Run.
type Transfer struct {
	cfg     Config
	topo    *topology
	payload *os.File // unlinked: it dies with the process
	file    string   // its /proc/self/fd path, for the senders to open
	pat     pattern
	workers []*worker
	done    chan workerDone
	// Two-host halves: where a receiving half listens, its ports, and
	// the setup reports still to wait for (Connected).
	bind    DataBind
	ports   []int
	pending chan error

	mu       sync.Mutex
	ran      bool
	closed   bool
	closeErr error
}

// Prepare validates cfg, builds the topology and payload file, and starts a
// sender and a receiver thread per stream. When it returns, every
// connection is established and every thread is parked; no data has moved.
func Prepare(cfg Config) (*Transfer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	topo, err := newTopology(cfg)
	if err != nil {
		return nil, err
	}
	t := newTransfer(cfg, topo)
	if err := t.createPayload(); err != nil {
		return nil, err
	}
	ready := make(chan error, 2*cfg.Streams)
	for i := range cfg.Streams {
		port := make(chan int, 1)
		rx, tx := newWorker(RoleReceiver, i), newWorker(RoleSender, i)
		t.workers = append(t.workers, tx, rx)
		go t.receiverMain(rx, port, ready)
		go t.senderMain(tx, port, ready)
	}
	if err := t.waitReady(ready); err != nil {
		return nil, err
	}
	return t, nil
}

func newTransfer(cfg Config, topo *topology) *Transfer {
	return &Transfer{cfg: cfg, topo: topo, pat: newPattern(cfg.Size), done: make(chan workerDone, 2*cfg.Streams)}
}

// createPayload creates the payload file of the methods that read one.
func (t *Transfer) createPayload() error {
	if !t.cfg.usesFile() {
		return nil
	}
	var err error
	if t.payload, t.file, err = createPayloadFile(); err != nil {
		t.Close()
	}
	return err
}

// waitReady waits for one setup report per worker. On failure the
// transfer is closed and the first error returned.
func (t *Transfer) waitReady(ready <-chan error) error {
	var errs []error
	timeout := time.After(setupTimeout)
wait:
	for range t.workers {
		select {
		case err := <-ready:
			if err != nil {
				errs = append(errs, err)
				t.shutdownAll() // wake a peer stuck in accept
			}
		case <-timeout:
			errs = append(errs, fmt.Errorf("stream setup did not finish within %v", setupTimeout))
			break wait
		}
	}
	if len(errs) > 0 {
		// The first error is the cause: the shutdown it triggers makes
		// the peers fail too (a woken accept), which says nothing more.
		t.Close()
		return errs[0]
	}
	return nil
}

// mss is the TCP_MAXSEG of both ends, 0 for the path's own: Config.MSS
// when given. Otherwise a TCP_ZEROCOPY_RECEIVE run on this host (loopback,
// netns) takes zcMSS:
// there the segments carry the sender's pages, a page of payload each.
// Across a NIC the receiving driver lays the payload out in buffers of its
// own, and a page-sized segment can be the worst fit: virtio-net's big
// packets mode puts a frame's first 3,998 payload bytes after the headers
// in its first page and whole pages after, so every 4,096-byte payload
// straddles two pieces and nothing maps, where the link's own MSS (61,388
// at MTU 61,440) leaves 14 of every 15 pages mappable.
func (t *Transfer) mss() int {
	if t.cfg.MSS > 0 {
		return t.cfg.MSS
	}
	if t.cfg.RxMethod == RxZerocopy && t.cfg.Topology != TopoRemote {
		return zcMSS
	}
	return 0
}

// receiverMain: listen, hand the port to the sender, accept, park.
func (t *Transfer) receiverMain(w *worker, port chan<- int, ready chan<- error) {
	fail := func(err error) {
		port <- -1
		ready <- err
		w.closeFd()
		close(w.exited)
	}
	if err := w.lockThread(t.cfg.ReceiverCPU, t.topo.receiver); err != nil {
		fail(err)
		return
	}
	port0 := 0
	if t.bind.Ports.Lo > 0 {
		port0 = t.bind.Ports.Lo + w.Stream
	}
	ln, p, err := listenTCP(t.topo.receiver.addr(), port0, t.mss())
	if err != nil {
		fail(fmt.Errorf("receiver %d: %w", w.Stream, err))
		return
	}
	w.setFd(ln) // so that a failed Prepare can wake accept with shutdown
	port <- p
	fd, err := acceptTCP(ln, t.bind.Peer)
	w.closeFd()
	if err != nil {
		ready <- fmt.Errorf("receiver %d: %w", w.Stream, err)
		close(w.exited)
		return
	}
	w.setFd(fd)
	if w.Cookie, err = socketCookie(fd); err != nil {
		ready <- fmt.Errorf("receiver %d: %w", w.Stream, err)
		w.closeFd()
		close(w.exited)
		return
	}
	rs := &rxStream{cfg: t.cfg, fd: fd, pat: t.pat}
	m, err := newRxMethod(rs)
	if err != nil {
		ready <- fmt.Errorf("receiver %d: %w", w.Stream, err)
		w.closeFd()
		close(w.exited)
		return
	}
	ready <- nil
	w.park(func(*runCtl) (StreamResult, error) {
		err := rs.run(m)
		return rs.res, err
	}, t.done, m.close)
}

// senderMain: wait for the port, connect, set up the method, park.
func (t *Transfer) senderMain(w *worker, port <-chan int, ready chan<- error) {
	fail := func(err error) {
		ready <- err
		w.closeFd()
		close(w.exited)
	}
	if err := w.lockThread(t.cfg.SenderCPU, t.topo.sender); err != nil {
		fail(err)
		return
	}
	var p int
	select {
	case p = <-port:
	case <-time.After(setupTimeout):
		p = -1
	}
	if p < 0 {
		fail(fmt.Errorf("sender %d: receiver not listening", w.Stream))
		return
	}
	fd, err := dialTCP(t.topo.receiver.addr(), p, t.mss(), nil)
	if err != nil {
		fail(fmt.Errorf("sender %d: %w", w.Stream, err))
		return
	}
	w.setFd(fd)
	congestion, err := setCongestion(fd, t.cfg.Congestion)
	if err != nil {
		fail(fmt.Errorf("sender %d: %w", w.Stream, err))
		return
	}
	if w.Cookie, err = socketCookie(fd); err != nil {
		fail(fmt.Errorf("sender %d: %w", w.Stream, err))
		return
	}
	ts := &txStream{cfg: t.cfg, fd: fd, file: t.file, pat: t.pat}
	ts.res.Congestion = congestion
	if ts.res.MSS, err = connectedMSS(fd); err != nil {
		fail(fmt.Errorf("sender %d: %w", w.Stream, err))
		return
	}
	ts.readTxDevice()
	m, err := newTxMethod(ts)
	if err != nil {
		fail(fmt.Errorf("sender %d: %w", w.Stream, err))
		return
	}
	ready <- nil
	w.park(func(ctl *runCtl) (StreamResult, error) {
		err := ts.run(m, ctl)
		return ts.res, err
	}, t.done, m.close)
}

// Threads lists every sender and receiver thread.
func (t *Transfer) Threads() []Thread {
	out := make([]Thread, 0, len(t.workers))
	for _, w := range t.workers {
		out = append(out, w.Thread)
	}
	return out
}

func (t *Transfer) shutdownAll() {
	for _, w := range t.workers {
		w.shutdown()
	}
}

// Run releases all threads and returns when every stream has finished:
// after Bytes per stream, or after Duration (senders stop, receivers drain
// to EOF so received == sent). Cancelling ctx shuts the sockets down and
// returns promptly with ctx's error. Threads stay alive and parked
// afterwards, until Close. A Transfer runs once.
func (t *Transfer) Run(ctx context.Context) (Result, error) {
	t.mu.Lock()
	if t.closed || t.ran {
		t.mu.Unlock()
		return Result{}, errors.New("workload: transfer already ran or closed")
	}
	t.ran = true
	t.mu.Unlock()

	if t.cfg.ColdCache && t.file != "" {
		if err := evictFile(t.file); err != nil {
			return Result{}, err
		}
	}
	ctl := &runCtl{limit: t.cfg.Bytes}
	res := Result{Streams: make([]StreamResult, t.cfg.Streams)}
	start := time.Now()
	for _, w := range t.workers {
		w.cmd <- ctl
	}
	if t.cfg.Duration > 0 {
		timer := time.AfterFunc(t.cfg.Duration, func() { ctl.stop.Store(true) })
		defer timer.Stop()
	}

	abort := func() {
		ctl.stop.Store(true)
		ctl.abort.Store(true)
		t.shutdownAll()
	}
	var errs []error
	var grace <-chan time.Time
	ctxDone := ctx.Done()
	end := start
	failed := false
	for pending := len(t.workers); pending > 0; {
		select {
		case d := <-t.done:
			pending--
			res.Streams[d.w.Stream].add(d.res)
			end = later(end, d.end)
			if d.err != nil && !ctl.abort.Load() {
				errs = append(errs, fmt.Errorf("%s %d: %w", d.w.Role, d.w.Stream, d.err))
				// The peer may now block forever (full socket buffer).
				failed = true
				abort()
				grace = time.After(stopGrace)
			}
		case <-ctxDone:
			ctxDone = nil
			abort()
			grace = time.After(stopGrace)
		case <-grace:
			errs = append(errs, fmt.Errorf("workload: %d threads did not stop within %v", pending, stopGrace))
			pending = 0
		}
	}
	res.Elapsed = end.Sub(start)
	if ctx.Err() != nil && !failed {
		return res, ctx.Err()
	}
	return res, errors.Join(errs...)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Close ends every thread, closes all fds and mappings, and removes the
// payload file and network namespaces. Idempotent; safe after a failed or
// cancelled Run.
func (t *Transfer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return t.closeErr
	}
	t.closed = true
	t.shutdownAll()
	var errs []error
	deadline := time.After(stopGrace)
	for _, w := range t.workers {
		select {
		case <-w.exited:
			continue
		default:
		}
		close(w.quit)
		select {
		case <-w.exited:
		case <-deadline:
			errs = append(errs, fmt.Errorf("workload: %s %d (tid %d) did not exit", w.Role, w.Stream, w.TID))
		}
	}
	if t.payload != nil {
		errs = append(errs, t.payload.Close())
	}
	if t.topo != nil {
		errs = append(errs, t.topo.close())
	}
	t.closeErr = errors.Join(errs...)
	return t.closeErr
}
