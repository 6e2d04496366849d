// Package workload generates TCP transfers for `zcprof run`: one sender and
// one receiver OS thread per stream, each locked (and optionally pinned),
// moving a verifiable byte pattern with a chosen send and receive path.
// Every data-path operation is a raw syscall on a blocking fd.
package workload

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/zcprof/zcprof/workload/iouring"
)

// Send methods.
const (
	MethodWrite       = "write"
	MethodSend        = "send"
	MethodWritev      = "writev"
	MethodMsgZerocopy = "msg_zerocopy"
	MethodSendfile    = "sendfile"
	MethodSplice      = "splice"
	MethodVmsplice    = "vmsplice"
	MethodMmap        = "mmap"
	MethodIOUring     = "io_uring"
	MethodIOUringZC   = "io_uring_zc"
)

// Receive methods.
const (
	RxRead     = "read"
	RxTrunc    = "trunc"
	RxSplice   = "splice"
	RxZerocopy = "zerocopy"
)

// Topologies.
const (
	TopoLoopback = "loopback"
	TopoNetns    = "netns"
	// TopoRemote is a two-host run: this process plays one role and the
	// peer (`zcprof serve`) the other. It is not a --topology choice.
	TopoRemote = "remote"
)

// Methods and RxMethods list the accepted names in display order.
var (
	Methods = []string{MethodWrite, MethodSend, MethodWritev, MethodMsgZerocopy, MethodSendfile,
		MethodSplice, MethodVmsplice, MethodMmap, MethodIOUring, MethodIOUringZC}
	RxMethods  = []string{RxRead, RxTrunc, RxSplice, RxZerocopy}
	Topologies = []string{TopoLoopback, TopoNetns}
)

const (
	pageSize = 4096
	maxSize  = 256 << 20
)

// Config describes one transfer. The zero values of RxMethod and Topology
// mean "read" and "loopback".
type Config struct {
	Method   string        // send method, one of Methods
	RxMethod string        // receive method, one of RxMethods
	Size     int           // bytes per send call / per receive buffer
	Streams  int           // parallel connections, each one sender + one receiver thread
	Duration time.Duration // run time; 0 means use Bytes
	Bytes    int64         // if > 0 each stream sends exactly this many bytes
	Topology string        // "loopback" (default) or "netns"

	SenderCPU, ReceiverCPU int // -1 = no pinning

	ColdCache      bool // sendfile/splice/mmap: evict the payload file from page cache before Run
	NoSockZerocopy bool // msg_zerocopy without SO_ZEROCOPY: the kernel silently copies
	// Congestion sets the sender's TCP congestion control (TCP_CONGESTION),
	// "" keeps the system's: pacing (bbr) changes where a sender's CPU goes.
	Congestion string
	// MSS is both ends' TCP_MAXSEG (iperf3 -M); 0 keeps the path's own,
	// or on one host a page of payload for TCP_ZEROCOPY_RECEIVE (mss).
	MSS int
}

// The TCP_MAXSEG values the kernel accepts (do_tcp_setsockopt: TCP_MIN_MSS
// to MAX_TCP_WINDOW).
const (
	MinMSS = 88
	MaxMSS = 32767
)

// MaxStreams is the largest accepted Streams: 4 per CPU (each stream is two
// busy threads, so more than that only measures the scheduler), at least 8.
func MaxStreams() int { return max(8, 4*runtime.NumCPU()) }

func (c Config) withDefaults() Config {
	if c.RxMethod == "" {
		c.RxMethod = RxRead
	}
	if c.Topology == "" {
		c.Topology = TopoLoopback
	}
	if c.Streams == 0 {
		c.Streams = 1
	}
	return c
}

// Validate checks c without starting anything and returns a one-line
// error: c as a whole, for a run whose sender runs on this kernel.
func (c Config) Validate() error {
	if err := c.ValidateReceiver(); err != nil {
		return err
	}
	if err := CanSend(c.Method); err != nil {
		return fmt.Errorf("method %q: %v", c.Method, err)
	}
	return nil
}

// ValidateReceiver is Validate for the receiving half of a two-host run:
// all of c but what only the sender's kernel must support.
func (c Config) ValidateReceiver() error {
	c = c.withDefaults()
	if !slices.Contains(Methods, c.Method) {
		return fmt.Errorf("unknown method %q (want %s)", c.Method, strings.Join(Methods, ", "))
	}
	if !slices.Contains(RxMethods, c.RxMethod) {
		return fmt.Errorf("unknown rx method %q (want %s)", c.RxMethod, strings.Join(RxMethods, ", "))
	}
	if !slices.Contains(Topologies, c.Topology) && c.Topology != TopoRemote {
		return fmt.Errorf("unknown topology %q (want %s)", c.Topology, strings.Join(Topologies, ", "))
	}
	if c.Size <= 0 {
		return fmt.Errorf("--size %d: message size must be positive", c.Size)
	}
	if c.Size > maxSize {
		return fmt.Errorf("--size %d: message size must be at most %d", c.Size, maxSize)
	}
	if c.RxMethod == RxZerocopy && c.Size%pageSize != 0 {
		return fmt.Errorf("rx method %q needs a size that is a multiple of %d (got %d)", RxZerocopy, pageSize, c.Size)
	}
	if c.Streams < 1 || c.Streams > MaxStreams() {
		return fmt.Errorf("--streams %d: must be between 1 and %d", c.Streams, MaxStreams())
	}
	if c.Duration < 0 || c.Bytes < 0 {
		return fmt.Errorf("duration and bytes must not be negative")
	}
	if c.Duration == 0 && c.Bytes == 0 {
		return fmt.Errorf("need a duration or a byte count")
	}
	for _, p := range []struct {
		name string
		cpu  int
	}{{"sender", c.SenderCPU}, {"receiver", c.ReceiverCPU}} {
		if p.cpu < -1 || p.cpu >= runtime.NumCPU() {
			return fmt.Errorf("--cpus: %s cpu %d out of range (-1 or 0..%d)", p.name, p.cpu, runtime.NumCPU()-1)
		}
	}
	if err := validCongestion(c.Congestion); err != nil {
		return err
	}
	if c.MSS != 0 && (c.MSS < MinMSS || c.MSS > MaxMSS) {
		return fmt.Errorf("--mss %d: the kernel takes a TCP_MAXSEG from %d to %d (0: the path's own)", c.MSS, MinMSS, MaxMSS)
	}
	if c.NoSockZerocopy && c.Method != MethodMsgZerocopy {
		return fmt.Errorf("no-sock-zerocopy applies only to method %q", MethodMsgZerocopy)
	}
	return nil
}

// CanSend says why this kernel cannot send with method, or nil.
func CanSend(method string) error {
	if method != MethodIOUring && method != MethodIOUringZC {
		return nil
	}
	if err := iouring.Available(); err != nil {
		return err
	}
	op, name, since := uint8(iouring.OpSend), "IORING_OP_SEND", "5.6"
	if method == MethodIOUringZC {
		op, name, since = iouring.OpSendZC, "IORING_OP_SEND_ZC", "6.0"
	}
	if ok, err := iouring.Supported(op); err != nil || !ok {
		return fmt.Errorf("this kernel's io_uring lacks %s (Linux %s and later have it)", name, since)
	}
	return nil
}

// usesFile reports whether the send method reads a payload file.
func (c Config) usesFile() bool {
	return c.Method == MethodSendfile || c.Method == MethodSplice || c.Method == MethodMmap
}
