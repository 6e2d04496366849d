package attrib

import (
	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/report"
)

// Categories of the taxonomy (docs/architecture.md), in report order.
const (
	CopyTx       = "copy.tx"
	CopyRx       = "copy.rx"
	CopyDeferred = "copy.deferred"
	ZcPin        = "zc.pin"
	Splice       = "splice"
	Pagecache    = "pagecache"
	TCPTx        = "tcp.tx"
	TCPRx        = "tcp.rx"
	IPDev        = "ip.dev"
	SkbMem       = "skb.mem"
	Sched        = "sched"
	Lock         = "lock"
	Syscall      = "syscall"
	Other        = "other"
	// Tracing is time in tracepoint handlers and BPF programs: zcprof's own
	// instrumentation (with the run-time statistics' clock reads), and any
	// other tracer's. Kept apart so it does not pass for kernel work; the
	// exact figure is overhead.bpf_ns.
	Tracing = "tracing"
)

// CategoryNames lists every category in report order.
var CategoryNames = []string{CopyTx, CopyRx, CopyDeferred, ZcPin, Splice, Pagecache,
	TCPTx, TCPRx, IPDev, SkbMem, Sched, Lock, Syscall, Other, Tracing}

// Reading is a backend's cumulative counters at one instant. Take one next
// to each profiler.Snapshot; an interval's categories come from two.
type Reading interface {
	Backend() string
}

// Backend is one attribution backend attached to a profiler.Session.
type Backend interface {
	// Name is kernel.Sampling, kernel.Fentry or kernel.Kprobe.
	Name() string
	// Read returns the cumulative counters now.
	Read() (Reading, error)
	// Categories splits the exact time of each (generation, path, context)
	// of iv into categories, from the readings taken at iv's two ends
	// (prev nil: since the backend started). Keys without data are absent.
	Categories(iv profiler.Interval, prev, cur Reading) map[profiler.Key][]report.Category
	// Unavailable lists what this backend could not provide, with the
	// kernel's reason (e.g. "pmu": no hardware counters).
	Unavailable() map[string]string
	// Close detaches everything; safe to call more than once.
	Close() error
}
