package main

import (
	"fmt"
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/zcprof/zcprof/profiler/report"
	zrun "github.com/zcprof/zcprof/workload/run"
)

// isTerminal: progress bars only on a terminal (logs and pipes get the
// plain per-cell lines).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// runProgress shows `zcprof run` progress on stderr: a bar over every run
// of every cell (matrix cell i of N, run r of R, elapsed, ETA) on a
// terminal; one line per finished cell otherwise. Off with --quiet.
func runProgress(w io.Writer, opts *zrun.Options, quiet bool) (done func()) {
	if quiet {
		return func() {}
	}
	cellLine := func(i, n int, c report.Cell) string {
		return fmt.Sprintf("cell %d/%d %s→%s %s ×%d: %s", i+1, n, c.Method, c.RxMethod,
			report.SizeString(c.Size), c.Streams, report.Throughput(c.ThroughputBps))
	}
	if !isTerminal(w) {
		opts.OnCell = func(i, n int, c report.Cell) { fmt.Fprintln(w, cellLine(i, n, c)) }
		return func() {}
	}
	var bar *progressbar.ProgressBar
	opts.OnRun = func(i, n, r, repeats int) {
		if bar == nil {
			bar = progressbar.NewOptions(n*repeats,
				progressbar.OptionSetWriter(w),
				progressbar.OptionShowCount(),
				progressbar.OptionSetElapsedTime(true),
				progressbar.OptionSetPredictTime(true),
				progressbar.OptionClearOnFinish(),
				progressbar.OptionSetWidth(20))
		}
		bar.Describe(fmt.Sprintf("cell %d/%d, run %d/%d", i+1, n, r+1, repeats))
		// With --ci a cell may stop before its last repeat: jump to
		// the cell's first run slot so the count and ETA stay true.
		if cur := i*repeats + r; int(bar.State().CurrentNum) < cur {
			bar.Set(cur)
		} else {
			bar.RenderBlank()
		}
	}
	opts.OnCell = func(i, n int, c report.Cell) {
		if bar != nil {
			bar.Set((i + 1) * bar.GetMax() / n)
			bar.Clear() // the cell's line goes above the bar
		}
		fmt.Fprintln(w, cellLine(i, n, c))
	}
	return func() {
		if bar != nil {
			bar.Finish()
		}
	}
}
