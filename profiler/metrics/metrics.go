// Package metrics exposes `zcprof profile` figures as Prometheus metrics
// (--metrics ADDR): counters that grow with every interval's exact
// figures, cardinality bounded by a cap on process label values.
package metrics

import (
	"net/http"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zcprof/zcprof/profiler/report"
)

// DefaultMaxProcesses caps the distinct values of the process label; the
// rest are counted under OtherLabel.
const DefaultMaxProcesses = 50

// OtherLabel is the process label of everything past the cap.
const OtherLabel = "other"

// Exporter turns interval documents into Prometheus counters.
type Exporter struct {
	reg     *prometheus.Registry
	cpu     *prometheus.CounterVec
	probe   *prometheus.CounterVec
	calls   *prometheus.CounterVec
	bytes   *prometheus.CounterVec
	classes *prometheus.CounterVec
	system  *prometheus.CounterVec
	bpf     prometheus.Counter
	events  prometheus.Counter
	docs    prometheus.Counter
	mapFull *prometheus.CounterVec

	mu      sync.Mutex
	max     int
	allowed map[string]bool
}

// New returns an exporter whose process label takes at most max values.
func New(max int) *Exporter {
	if max <= 0 {
		max = DefaultMaxProcesses
	}
	e := &Exporter{reg: prometheus.NewRegistry(), max: max, allowed: map[string]bool{}}
	e.cpu = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "zcprof_cpu_seconds_total",
		Help: "Exact on-CPU seconds of the target processes by path and context (user, syscall, softirq, hardirq)."},
		[]string{"process", "path", "context"})
	e.probe = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "zcprof_probe_seconds_total",
		Help: "zcprof's own handlers' time in the target processes' threads, cut out of zcprof_cpu_seconds_total: the two together are what the processes ran."},
		[]string{"process"})
	e.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "zcprof_calls_total",
		Help: "Syscalls of each path (softirq and hardirq paths: handler runs)."}, []string{"process", "path"})
	e.bytes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "zcprof_syscall_bytes_total",
		Help: "Bytes the syscalls of each path returned."}, []string{"process", "path"})
	e.classes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "zcprof_bytes_total",
		Help: "Socket bytes by path and byte class: copied, spliced, pinned, deferred_copied (tx); rx_copied, mapped, rx_spliced, rx_discarded (rx)."},
		[]string{"process", "path", "class"})
	e.system = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "zcprof_system_cpu_seconds_total",
		Help: "Interrupt time while no target ran (system.idle, system.ksoftirqd, system.other_task) by context."},
		[]string{"path", "context"})
	e.bpf = prometheus.NewCounter(prometheus.CounterOpts{Name: "zcprof_bpf_seconds_total",
		Help: "Run time of zcprof's own BPF programs (overhead)."})
	e.events = prometheus.NewCounter(prometheus.CounterOpts{Name: "zcprof_bpf_events_total",
		Help: "Invocations of zcprof's BPF programs."})
	e.docs = prometheus.NewCounter(prometheus.CounterOpts{Name: "zcprof_intervals_total",
		Help: "Intervals folded into these counters."})
	e.mapFull = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "zcprof_map_full_total",
		Help: "Updates a BPF map refused because it was full: counts missing from every other metric."}, []string{"map"})
	e.reg.MustRegister(e.cpu, e.probe, e.calls, e.bytes, e.classes, e.system, e.bpf, e.events, e.docs, e.mapFull)
	return e
}

// Registry is the exporter's registry (tests gather from it).
func (e *Exporter) Registry() *prometheus.Registry { return e.reg }

// Handler serves the metrics.
func (e *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{})
}

// process folds label values past the cap into "other". The first max
// names seen keep their own series for the exporter's lifetime.
func (e *Exporter) process(name string) string {
	if e.allowed[name] {
		return name
	}
	if len(e.allowed) < e.max {
		e.allowed[name] = true
		return name
	}
	return OtherLabel
}

// Context names the context a path's time ran in.
func Context(path string) string {
	switch {
	case path == "user":
		return "user"
	case strings.HasPrefix(path, "softirq."):
		return "softirq"
	case path == "hardirq":
		return "hardirq"
	}
	return "syscall"
}

// Add folds one interval's document (a delta) into the counters.
func (e *Exporter) Add(d *report.Document) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range d.Processes {
		proc := e.process(p.Comm)
		if p.CPU.ProbeNS > 0 {
			e.probe.WithLabelValues(proc).Add(float64(p.CPU.ProbeNS) / 1e9)
		}
		for _, path := range p.Paths {
			if path.CPUNS > 0 {
				e.cpu.WithLabelValues(proc, path.Path, Context(path.Path)).Add(float64(path.CPUNS) / 1e9)
			}
			if path.Calls > 0 {
				e.calls.WithLabelValues(proc, path.Path).Add(float64(path.Calls))
			}
			if path.Bytes > 0 {
				e.bytes.WithLabelValues(proc, path.Path).Add(float64(path.Bytes))
			}
			if zc := path.Zerocopy; zc != nil {
				for class, n := range map[string]uint64{
					"copied": zc.TxCopiedBytes, "spliced": zc.TxSplicedBytes, "pinned": zc.TxPinnedBytes,
					"deferred_copied": zc.TxDeferredCopyBytes, "rx_copied": zc.RxCopiedBytes, "mapped": zc.RxMappedBytes,
					"rx_spliced": zc.RxSplicedBytes, "rx_discarded": zc.RxDiscardedBytes,
				} {
					if n > 0 {
						e.classes.WithLabelValues(proc, path.Path, class).Add(float64(n))
					}
				}
			}
		}
	}
	if d.System != nil {
		for _, path := range d.System.Paths {
			for ctx, ns := range map[string]uint64{"softirq": path.SoftirqNS, "hardirq": path.HardirqNS} {
				if ns > 0 {
					e.system.WithLabelValues(path.Path, ctx).Add(float64(ns) / 1e9)
				}
			}
		}
	}
	e.bpf.Add(float64(d.Overhead.BPFNS) / 1e9)
	e.events.Add(float64(d.Overhead.Events))
	for name, n := range d.Overhead.MapFull {
		e.mapFull.WithLabelValues(name).Add(float64(n))
	}
	e.docs.Inc()
}
