// Package run coordinates the transfers of a run (the library behind
// `zcprof run`, and each side of a two-host run): it expands a matrix of transfer methods,
// sizes and stream counts, runs each cell with the workload generator under
// the exact accounting (one profiler session per run of a cell, on the
// cell's own sender and receiver threads only), and reports each side's
// CPU beside what the workload itself observed.
package run

import (
	"errors"
	"fmt"
	"time"

	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/workload"
)

// CI is netperf's -I: repeat until the LEVEL confidence interval of the
// mean is at most WidthPct percent of the mean wide, for the throughput
// and both sides' CPU.
type CI struct {
	Level    float64 // e.g. 0.95
	WidthPct float64 // e.g. 5: the interval is within ±2.5% of the mean
}

// Options configure a run.
type Options struct {
	Methods   []string
	RxMethods []string
	Sizes     []int
	Streams   []int
	Duration  time.Duration // per run of a cell; 0 with Bytes
	Bytes     int64         // per stream, instead of Duration
	Topology  string
	// SenderCPU and ReceiverCPU pin every sender and receiver thread
	// (-1: no pinning).
	SenderCPU, ReceiverCPU int
	// Repeat is how often each cell runs; with CI it is the most.
	Repeat    int
	CI        *CI
	ColdCache bool
	// Congestion is the senders' TCP congestion control ("": the system's).
	Congestion string
	// MSS is the data connections' TCP_MAXSEG (0: the path's own; see
	// workload.Config).
	MSS     int
	Threads bool   // per-thread entries in each side
	Backend string // accounting backend: auto, tp_btf, raw_tp
	// ByteClasses selects how send decisions are observed (profiler.Options).
	ByteClasses string
	// Attribution, if set, runs a category backend beside the accounting
	// (--backend): categories per path, traced functions, weighted stacks.
	Attribution *attrib.Options

	// Peer, if set, is the other host of a two-host run (--remote): this
	// host sends (receives with Reverse) and the peer plays the other
	// role. DataPorts is where this host listens when it receives.
	Peer      Peer
	Reverse   bool
	DataPorts workload.PortRange

	// OnCell, if set, gets each finished cell (progress output).
	OnCell func(cellIndex, cells int, c report.Cell)
	// OnRun, if set, is called before each run of a cell (progress bar):
	// run counts from 0 up to at most repeats-1.
	OnRun func(cellIndex, cells, run, repeats int)
}

// DefaultMethods is the matrix of `zcprof run` without flags.
var DefaultMethods = []string{workload.MethodWrite, workload.MethodSendfile, workload.MethodSplice,
	workload.MethodMsgZerocopy, workload.MethodIOUringZC}

// Defaults: every default method at 64 KiB, one stream, 3 s each,
// loopback, read on the receiver.
func Defaults() Options {
	return Options{
		Methods:     DefaultMethods,
		RxMethods:   []string{workload.RxRead},
		Sizes:       []int{64 << 10},
		Streams:     []int{1},
		Duration:    3 * time.Second,
		Topology:    workload.TopoLoopback,
		SenderCPU:   -1,
		ReceiverCPU: -1,
		Repeat:      1,
	}
}

// minCIRepeats: fewer samples give intervals too wide to mean anything
// (t = 12.7 with two), as netperf's minimum iterations.
const minCIRepeats = 3

// DefaultCIRepeat is the most repeats with --ci when --repeat is not given
// (netperf's default maximum iterations).
const DefaultCIRepeat = 10

// MaxRepeat bounds --repeat.
const MaxRepeat = 1000

// Configs expands the matrix in display order: method, then receive
// method, size, streams. Every cell is validated; the first error, in one
// line, names the cell's parameter.
func (o Options) Configs() ([]workload.Config, error) {
	if len(o.Methods) == 0 || len(o.RxMethods) == 0 || len(o.Sizes) == 0 || len(o.Streams) == 0 {
		return nil, errors.New("empty matrix: need at least one method, rx method, size and stream count")
	}
	if o.Repeat < 1 || o.Repeat > MaxRepeat {
		return nil, fmt.Errorf("--repeat %d: must be between 1 and %d", o.Repeat, MaxRepeat)
	}
	if o.CI != nil && o.Repeat < minCIRepeats {
		return nil, fmt.Errorf("--ci needs --repeat of at least %d (the most repeats to try), got %d", minCIRepeats, o.Repeat)
	}
	if o.Duration != 0 && o.Bytes != 0 {
		return nil, errors.New("give either --duration or --bytes, not both")
	}
	if o.Duration < 0 {
		return nil, fmt.Errorf("--duration %v: must be positive", o.Duration)
	}
	if o.Duration > 0 && o.Duration < 100*time.Millisecond {
		return nil, fmt.Errorf("--duration %v: must be at least 100ms", o.Duration)
	}
	if o.Bytes < 0 {
		return nil, fmt.Errorf("--bytes %d: must be positive", o.Bytes)
	}
	var out []workload.Config
	seen := map[workload.Config]bool{}
	for _, m := range o.Methods {
		for _, rx := range o.RxMethods {
			for _, size := range o.Sizes {
				for _, streams := range o.Streams {
					c := workload.Config{
						Method: m, RxMethod: rx, Size: size, Streams: streams,
						Duration: o.Duration, Bytes: o.Bytes, Topology: o.Topology,
						SenderCPU: o.SenderCPU, ReceiverCPU: o.ReceiverCPU,
						// Only the methods that read a file have a cache to evict.
						ColdCache:  o.ColdCache && readsFile(m),
						Congestion: o.Congestion,
						MSS:        o.MSS,
					}
					if err := o.checkHere(c); err != nil {
						return nil, err
					}
					if !seen[c] {
						seen[c] = true
						out = append(out, c)
					}
				}
			}
		}
	}
	return out, nil
}

func readsFile(method string) bool {
	return method == workload.MethodSendfile || method == workload.MethodSplice || method == workload.MethodMmap
}

// checkHere validates a cell as this host runs it: in a two-host run, the
// CPU of the role the peer plays is the peer's to check (a machine of
// another size).
func (o Options) checkHere(c workload.Config) error {
	if o.Topology == workload.TopoRemote {
		if o.Reverse {
			c.SenderCPU = -1
			return c.ValidateReceiver() // nor can this kernel's send methods matter
		}
		c.ReceiverCPU = -1
	}
	return c.Validate()
}
