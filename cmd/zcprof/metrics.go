package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/metrics"
	"github.com/zcprof/zcprof/profiler/report"
)

// metricsFlags wire `profile --metrics`.
type metricsFlags struct {
	addr         string
	maxProcesses int
}

// metricsInterval is how often the counters grow when --interval is not
// given (a scrape sees figures at most this old).
const metricsInterval = time.Second

func (m *metricsFlags) register(f *pflag.FlagSet) {
	f.StringVar(&m.addr, "metrics", "", "serve Prometheus metrics on `ADDR`/metrics while profiling (:9464 binds to 127.0.0.1; give 0.0.0.0:9464 to listen on every address)")
	f.IntVar(&m.maxProcesses, "metrics-max-processes", metrics.DefaultMaxProcesses, "distinct process label values; the rest are counted as \"other\"")
}

// start binds the address (a port in use fails here, before anything is
// attached), serves until ctx ends, and folds every interval's document
// into the counters; renderInterval is also called when the user asked
// for --interval. The returned stop waits for the server to shut down.
//
// A port left to the kernel (":0" or ":") is printed on stderr, once: the
// user has no other way to learn it.
func (m *metricsFlags) start(ctx context.Context, opts *profiler.ProfileOptions, stderr io.Writer) (stop func(), err error) {
	if m.addr == "" {
		return func() {}, nil
	}
	ln, err := metrics.Listen(m.addr)
	if err != nil {
		return nil, err
	}
	if _, port, _ := net.SplitHostPort(m.addr); port == "" || port == "0" {
		fmt.Fprintf(stderr, "zcprof: serving metrics on http://%s/metrics\n", ln.Addr())
	}
	exp := metrics.New(m.maxProcesses)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		metrics.Serve(sctx, ln, exp.Handler())
		close(done)
	}()
	render := opts.OnInterval
	if opts.Interval == 0 {
		opts.Interval = metricsInterval
	}
	opts.OnInterval = func(d *report.Document) error {
		exp.Add(d)
		if render != nil {
			return render(d) // its warnings are in the table
		}
		warnMapFull(stderr, d.Overhead.MapFull)
		return nil
	}
	return func() { cancel(); <-done }, nil
}

// warnMapFull says at once, when no interval report is printed, that a map
// was full: its counts are missing from the report to come (and from the
// metrics being served).
func warnMapFull(w io.Writer, full map[string]uint64) {
	for _, name := range slices.Sorted(maps.Keys(full)) {
		fmt.Fprintf(w, "zcprof: warning: the BPF map %s was full: %d updates dropped since the last reading (with --metrics: zcprof_map_full_total)\n", name, full[name])
	}
}
