package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// OverheadLine is the overhead figures on one line.
func OverheadLine(o Overhead) string {
	return fmt.Sprintf("overhead: zcprof's handlers %s over %s runs in the measured threads (%.0f ns/run, %s of their CPU; of each run, %d ns is its dispatch: a handler cannot time it, measured at start)",
		Seconds(o.BPFNS), Digits(o.Events), o.NSPerEvent, Share(o.Share), o.DispatchNS)
}

// WriteTable renders a profile document for a terminal.
func WriteTable(w io.Writer, d *Document) error {
	bw := &errWriter{w: w}
	bw.printf("zcprof %s  %s  accounting: %s (exact)  attribution: %s\n",
		d.Command, Seconds(d.DurationNS), d.Backends.Accounting, attributionName(d.Backends))
	if why := AttributionWhy(d.Backends); why != "" {
		bw.printf("attribution: %s\n", why)
	}
	bw.printf("%s\n", OverheadLine(d.Overhead))
	for _, note := range d.Backends.Mounted {
		bw.printf("note: %s\n", note)
	}
	for _, p := range d.Processes {
		bw.printf("\n")
		writeProcess(bw, p, d.DurationNS)
		for _, t := range p.Threads {
			bw.printf("  thread %d %s: on-CPU %s, schedstat %s\n", t.TID, t.Comm, Seconds(t.CPU.OnCPUNS), Seconds(t.CPU.SchedstatNS))
			writePaths(bw, "    ", t.Paths)
		}
	}
	if len(d.Processes) == 0 {
		bw.printf("\nno target process ran during the interval\n")
	}
	if d.System != nil {
		bw.printf("\nSYSTEM (interrupts while no target ran: idle CPUs, ksoftirqd, other tasks)  softirq %s  hardirq %s\n",
			Seconds(d.System.CPU.SoftirqNS), Seconds(d.System.CPU.HardirqNS))
		writePaths(bw, "  ", d.System.Paths)
	}
	writePrecision(bw, d.Precision)
	for _, warn := range append(UnattachedWarnings(d.Backends), d.Warnings...) {
		bw.printf("warning: %s\n", warn)
	}
	return bw.err
}

func writeProcess(bw *errWriter, p Process, durationNS uint64) {
	c := p.CPU
	who := fmt.Sprintf("PID %d %s", p.PID, p.Comm)
	switch {
	case p.ExitedProcesses > 0: // exited processes summed by name
		who = fmt.Sprintf("%s exited processes named %s", Digits(uint64(p.ExitedProcesses)), p.Comm)
	case p.PID == 0:
		who = "exited threads named " + p.Comm
	}
	bw.printf("%s: on-CPU %s (%s of a core)\n", who, Seconds(c.OnCPUNS), Percent(c.OnCPUNS, durationNS))
	bw.printf("  user %s  kernel %s  softirq %s (net_rx %s, net_tx %s, other %s)  hardirq %s  (beside them: zcprof's handlers %s)\n",
		Seconds(c.UserNS), Seconds(c.KernelNS), Seconds(c.SoftirqNS),
		Seconds(c.SoftirqNetRxNS), Seconds(c.SoftirqNetTxNS), Seconds(c.SoftirqOtherNS), Seconds(c.HardirqNS), Seconds(c.ProbeNS))
	bw.printf("  kernel's own figures: schedstat %s (measured %s%s)  times(): user %s system %s\n",
		Seconds(c.SchedstatNS), signedPercent(c.KernelViewNS(), c.SchedstatNS),
		boundaryNote(c.SchedstatBoundaryNS), Seconds(c.TimesUserNS), Seconds(c.TimesSystemNS))
	writePaths(bw, "  ", p.Paths)
	if why := TimesExplanation(c); why != "" {
		bw.printf("  %s\n", why)
	}
	// A verdict that cannot tell is shown wherever the paths moved bytes.
	if zc := p.Zerocopy; zc != nil && (zc.TxBytes+zc.RxBytes() > 0 || len(zc.Unavailable) > 0 && socketBytes(p.Paths) > 0) {
		bw.printf("  zero-copy: %s\n", zc.Verdict)
		if zc.Source == ZerocopySourceKernel {
			bw.printf("    %s\n", zerocopyBytes(zc))
		}
	}
}

// socketBytes is what the tx.* and rx.* paths moved.
func socketBytes(paths []Path) uint64 {
	var n uint64
	for _, p := range paths {
		if strings.HasPrefix(p.Path, "tx.") || strings.HasPrefix(p.Path, "rx.") {
			n += p.Bytes
		}
	}
	return n
}

// zerocopyBytes is the byte classes behind a verdict, on one line.
func zerocopyBytes(zc *Zerocopy) string {
	byteSize := func(n uint64) string {
		if n == 0 {
			return "0"
		}
		return byteSize(n)
	}
	var parts []string
	if zc.TxBytes > 0 {
		parts = append(parts, fmt.Sprintf("sent %s: copied %s, spliced %s, pinned %s, copied later %s",
			byteSize(zc.TxBytes), byteSize(zc.TxCopiedBytes), byteSize(zc.TxSplicedBytes), byteSize(zc.TxPinnedBytes), byteSize(zc.TxDeferredCopyBytes)))
	}
	if zc.ZCCompletions > 0 {
		parts = append(parts, fmt.Sprintf("%s of %s completions COPIED", count(zc.ZCCompletionsCopied), count(zc.ZCCompletions)))
	}
	if rx := zc.RxBytes(); rx > 0 {
		line := fmt.Sprintf("received %s: copied %s, mapped %s", byteSize(rx), byteSize(zc.RxCopiedBytes), byteSize(zc.RxMappedBytes))
		if n := zc.RxSplicedBytes; n > 0 {
			line += ", spliced " + byteSize(n)
		}
		if n := zc.RxDiscardedBytes; n > 0 {
			line += ", discarded " + byteSize(n)
		}
		parts = append(parts, line)
	}
	return strings.Join(parts, "; ")
}

func writePaths(bw *errWriter, indent string, paths []Path) {
	if len(paths) == 0 {
		return
	}
	const row = "%s%-18s %12s %11s %10s %10s %10s  %s\n"
	bw.printf(row, indent, "PATH", "CALLS", "BYTES", "CPU", "CPU/CALL", "CPU/MiB", "SOFTIRQ DURING PATH")
	for _, p := range paths {
		bw.printf(row, indent, p.Path, count(p.Calls), byteSize(p.Bytes), Seconds(p.CPUNS),
			perCall(p.NSPerCall), perCall(p.NSPerMiB), softirqCell(p))
		if cats := categoryCell(p); cats != "" {
			bw.printf("%s  inside: %s\n", indent, cats)
		}
		if fns := functionsCell(p); fns != "" {
			bw.printf("%s  traced: %s\n", indent, fns)
		}
	}
}

// TimesExplanation says, in one sentence, why times() differs from the
// exact split: softirq work billed to this task's system time.
func TimesExplanation(c CPU) string {
	// Only worth a sentence when it moves the figure by 1% or more.
	if c.TimesSystemNS == 0 || c.SoftirqNS*100 < c.TimesSystemNS {
		return ""
	}
	return fmt.Sprintf("times() reports %s of system time, of which %s was softirq work run in this context (NET_RX %s), not its own syscalls: on loopback and veth that is receive processing for whichever socket the packets were for",
		Seconds(c.TimesSystemNS), Seconds(c.SoftirqNS), Seconds(c.SoftirqNetRxNS))
}

// boundaryNote explains a visible schedstat boundary billing.
func boundaryNote(ns int64) string {
	switch {
	case ns >= 500_000:
		return fmt.Sprintf("; schedstat also bills it %s of the runs of tasks that woke it", Seconds(uint64(ns)))
	case ns <= -500_000:
		return fmt.Sprintf("; schedstat bills %s of its runs to tasks it woke: the kernel ends a run at the wakeup that preempts it", Seconds(uint64(-ns)))
	}
	return ""
}

func softirqCell(p Path) string {
	if p.SoftirqNS < 500_000 { // below the table's resolution
		return ""
	}
	var parts []string
	keys := make([]string, 0, len(p.Softirq))
	for k := range p.Softirq {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, strings.TrimPrefix(k, "softirq.")+" "+Seconds(p.Softirq[k]))
	}
	return Seconds(p.SoftirqNS) + " (" + strings.Join(parts, ", ") + ")"
}

// attributionName is the attribution backend for a header, with the
// sampler's rate.
func attributionName(b Backends) string {
	if b.SampleHz > 0 {
		return fmt.Sprintf("%s at %d Hz", orNone(b.Attribution), b.SampleHz)
	}
	return orNone(b.Attribution)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// errWriter keeps the first write error so renderers can print freely.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) {
	fmt.Fprintf(e, format, args...)
}

// writePrecision prints the self-check: zcprof's totals against schedstat
// as they are, and the difference term by term.
func writePrecision(bw *errWriter, p *Precision) {
	if p == nil || p.Checked == 0 {
		return
	}
	bw.printf("\nself-check: %d thread(s), measured %s vs schedstat %s: %s = boundary %s + interrupts %s + residual %s (%d runs, %d clamped)\n",
		p.Checked, Seconds(p.MeasuredNS), Seconds(p.SchedstatNS), signedMillis(p.DiffNS), signedMillis(p.Terms.BoundaryNS),
		signedMillis(p.Terms.IRQTimeNS), signedMillis(p.ResidualNS), p.Terms.Runs, p.ClampedRuns)
	bw.printf("  bounds: %s: %d failed, largest residual %.2f%%\n", p.Bound, p.Failed, p.MaxErrPct)
}
