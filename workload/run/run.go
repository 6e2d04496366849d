package run

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/workload"
)

// Run validates the whole matrix, removes leftovers of crashed runs, then
// runs every cell (repeating as asked) and returns the zcprof/v1 document.
// On a failure it returns the document of the cells finished before it
// (nil if none) with the error.
// Cancelling ctx (Ctrl-C) stops the current run at once; everything it
// created is released before Run returns the interruption as an error.
func Run(ctx context.Context, o Options) (*report.Document, error) {
	cfgs, err := o.Configs()
	if err != nil {
		return nil, err
	}
	if err := kernel.Privileged(); err != nil {
		return nil, err
	}
	removed, err := workload.CleanupStale()
	if err != nil {
		return nil, fmt.Errorf("remove leftovers of earlier runs: %s", oneLine(err))
	}
	level := 0.95
	if o.CI != nil {
		level = o.CI.Level
	}
	var acc docAcc
	var stacks []report.Stack // --pprof, --folded: means over each cell's runs
	for i, cfg := range cfgs {
		var samples []report.Cell
		var cellStacks []report.Stack
		reached := false
		for r := range o.Repeat {
			if o.OnRun != nil {
				o.OnRun(i, len(cfgs), r, o.Repeat)
			}
			s, err := measure(ctx, cfg, o)
			if err != nil {
				name := cellName(report.Cell{Method: cfg.Method, RxMethod: cfg.RxMethod, Size: cfg.Size, Streams: cfg.Streams})
				// The cells already finished are kept: the caller prints
				// them beside the error.
				partial := acc.partial(stacks, removed)
				if ctx.Err() != nil {
					return partial, fmt.Errorf("interrupted during %s (run %d); the run's threads, sockets, namespaces, files and BPF programs were released%s", name, r+1, cleanupNote(err, ctx))
				}
				return partial, fmt.Errorf("%s: %s", name, oneLine(err))
			}
			acc.add(s)
			samples = append(samples, s.cell)
			cellStacks = append(cellStacks, s.doc.Stacks...)
			if o.CI != nil && len(samples) >= minCIRepeats && converged(cellStats(samples, level), o.CI) {
				reached = true
				break
			}
		}
		for _, st := range cellStacks {
			st.NS /= float64(len(samples))
			stacks = append(stacks, st)
		}
		cell := meanCell(samples)
		if len(samples) > 1 {
			cell.Stats = cellStats(samples, level)
		}
		if o.CI != nil {
			cell.ConfidenceReached = &reached
			if !reached {
				acc.warn(ciWarning(cell, o.CI))
			}
		}
		acc.doc.Cells = append(acc.doc.Cells, cell)
		if o.OnCell != nil {
			o.OnCell(i, len(cfgs), cell)
		}
	}
	return acc.partial(stacks, removed), nil
}

// partial is the document of the cells finished so far (nil if none).
func (a *docAcc) partial(stacks []report.Stack, removed []string) *report.Document {
	if a.doc == nil || len(a.doc.Cells) == 0 {
		return nil
	}
	d := a.finish()
	d.Stacks = stacks
	if len(removed) > 0 {
		d.Warnings = append(d.Warnings, "removed leftovers of an earlier zcprof run: "+strings.Join(removed, ", "))
	}
	return d
}

func converged(stats map[string]report.Stat, ci *CI) bool {
	for _, k := range stopFigures {
		if !withinWidth(stats[k], ci.WidthPct) {
			return false
		}
	}
	return true
}

func ciWarning(c report.Cell, ci *CI) string {
	var parts []string
	for _, k := range stopFigures {
		s := c.Stats[k]
		parts = append(parts, k+report.PlusMinus(s.CI, s.Mean, 1))
	}
	return fmt.Sprintf("%s: the %.0f%% confidence interval is not within ±%.1f%% of the mean after %d runs (%s): the machine is too noisy for this target",
		cellName(c), 100*ci.Level, ci.WidthPct/2, c.Repeats, strings.Join(parts, ", "))
}

// docAcc merges the per-run documents: host and backends from the first,
// overhead, duration and precision summed, warnings once each.
type docAcc struct {
	doc *report.Document
}

func (a *docAcc) add(s sample) {
	d := s.doc
	if a.doc == nil {
		c := *d
		c.Processes, c.System, c.Warnings, c.Cells = nil, nil, nil, nil
		c.Backends.ProgramIDs = nil
		c.Precision = &report.Precision{Bound: d.Precision.Bound}
		c.Overhead = report.Overhead{}
		c.DurationNS = 0
		a.doc = &c
	}
	a.doc.DurationNS += d.DurationNS
	a.doc.Backends.ProgramIDs = append(a.doc.Backends.ProgramIDs, d.Backends.ProgramIDs...)
	a.doc.Backends.ByteClasses = joinDistinct(a.doc.Backends.ByteClasses, d.Backends.ByteClasses)
	for k, v := range d.Backends.Unavailable {
		a.doc.Backends.Unavailable[k] = v
	}
	o := &a.doc.Overhead
	o.BPFNS += d.Overhead.BPFNS
	o.Events += d.Overhead.Events
	o.Misses += d.Overhead.Misses
	o.DispatchNS = d.Overhead.DispatchNS // measured once per process
	o.HookDispatchNS = d.Overhead.HookDispatchNS
	o.SampleDispatchNS = max(o.SampleDispatchNS, d.Overhead.SampleDispatchNS) // 0 on a side without the sampler
	if p := d.Precision; p != nil {
		a.doc.Precision.Merge(p)
	}
	// Per-run warnings say which cell they come from; the same words from
	// several runs of a cell are kept once.
	for _, w := range d.Warnings {
		if name := cellName(s.cell); !strings.HasPrefix(w, name) {
			w = name + ": " + w
		}
		a.warn(w)
	}
}

// joinDistinct adds v to the sorted comma-separated set list: cells may
// observe sends differently (an io_uring sender's side takes
// tcp_sendmsg_locked's decisions, the others infer them).
func joinDistinct(list, v string) string {
	if v == "" {
		return list
	}
	var set []string
	if list != "" {
		set = strings.Split(list, ", ")
	}
	if !slices.Contains(set, v) {
		set = append(set, v)
		slices.Sort(set)
	}
	return strings.Join(set, ", ")
}

func (a *docAcc) warn(w string) {
	if !slices.Contains(a.doc.Warnings, w) {
		a.doc.Warnings = append(a.doc.Warnings, w)
	}
}

func (a *docAcc) finish() *report.Document {
	d := a.doc
	// The cells hold means over their repeats: scale them back to the
	// runs the documents covered, so that bpf_ns, events and share keep
	// one scope (the cells' sides).
	var scope []report.CPU
	for _, c := range d.Cells {
		for _, side := range []report.CPU{c.Sender.CPU, c.Receiver.CPU} {
			n := uint64(c.Repeats)
			scope = append(scope, report.CPU{OnCPUNS: n * side.OnCPUNS, ProbeNS: n * side.ProbeNS, ProbeEvents: n * side.ProbeEvents})
		}
	}
	misses, dispatch, hook := d.Overhead.Misses, d.Overhead.DispatchNS, d.Overhead.HookDispatchNS
	report.ScopeOverhead(&d.Overhead, scope...)
	d.Overhead.Misses, d.Overhead.DispatchNS, d.Overhead.HookDispatchNS = misses, dispatch, hook
	return d
}

// cleanupNote adds what failed while releasing, if anything did.
func cleanupNote(err error, ctx context.Context) string {
	if err == nil || err == ctx.Err() {
		return ""
	}
	msg := oneLine(err)
	if msg == ctx.Err().Error() {
		return ""
	}
	return " (" + msg + ")"
}

func oneLine(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
}
