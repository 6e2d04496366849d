package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteTable renders a profile document for a terminal.
func WriteTable(w io.Writer, d *Document) error {
	bw := &errWriter{w: w}
	bw.printf("zcprof %s  %s  accounting: %s (exact)  attribution: %s\n",
		d.Command, Seconds(d.DurationNS), d.Backends.Accounting, orNone(d.Backends.Attribution))
	if why := AttributionWhy(d.Backends); why != "" {
		bw.printf("attribution: %s\n", why)
	}
	bw.printf("overhead: BPF %s over %d events (%.0f ns/event, %.2f%% of measured CPU)\n",
		Seconds(d.Overhead.BPFNS), d.Overhead.Events, d.Overhead.NSPerEvent, 100*d.Overhead.Share)
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
	if d.Precision != nil && d.Precision.Checked > 0 {
		bw.printf("\nself-check: %d thread(s) within %s of schedstat: %d failed, largest error %.2f%%\n",
			d.Precision.Checked, d.Precision.Bound, d.Precision.Failed, d.Precision.MaxErrPct)
	}
	for _, warn := range d.Warnings {
		bw.printf("warning: %s\n", warn)
	}
	return bw.err
}

func writeProcess(bw *errWriter, p Process, durationNS uint64) {
	c := p.CPU
	bw.printf("PID %d %s: on-CPU %s (%s of a core)\n", p.PID, p.Comm, Seconds(c.OnCPUNS), Percent(c.OnCPUNS, durationNS))
	bw.printf("  user %s  kernel %s  softirq %s (net_rx %s, net_tx %s, other %s)  hardirq %s\n",
		Seconds(c.UserNS), Seconds(c.KernelNS), Seconds(c.SoftirqNS),
		Seconds(c.SoftirqNetRxNS), Seconds(c.SoftirqNetTxNS), Seconds(c.SoftirqOtherNS), Seconds(c.HardirqNS))
	bw.printf("  kernel's own figures: schedstat %s (measured %s%s)  times(): user %s system %s\n",
		Seconds(c.SchedstatNS), signedPercent(uint64(int64(c.OnCPUNS)+c.SchedstatBoundaryNS), c.SchedstatNS),
		boundaryNote(c.SchedstatBoundaryNS), Seconds(c.TimesUserNS), Seconds(c.TimesSystemNS))
	writePaths(bw, "  ", p.Paths)
	if why := TimesExplanation(c); why != "" {
		bw.printf("  %s\n", why)
	}
	if zc := p.Zerocopy; zc != nil && zc.TxBytes+zc.RxCopiedBytes+zc.RxMappedBytes > 0 {
		bw.printf("  zero-copy: %s\n", zc.Verdict)
		if zc.Source == ZerocopySourceKernel {
			bw.printf("    %s\n", zerocopyBytes(zc))
		}
	}
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
	if rx := zc.RxCopiedBytes + zc.RxMappedBytes; rx > 0 {
		parts = append(parts, fmt.Sprintf("received %s: copied %s, mapped %s", byteSize(rx), byteSize(zc.RxCopiedBytes), byteSize(zc.RxMappedBytes)))
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

// Seconds formats nanoseconds as seconds with millisecond resolution.
func Seconds(ns uint64) string { return fmt.Sprintf("%.3f s", float64(ns)/1e9) }

// Percent formats a/b.
func Percent(a, b uint64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(a)/float64(b))
}

func signedPercent(measured, ref uint64) string {
	if ref == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%+.2f%%", 100*(float64(measured)-float64(ref))/float64(ref))
}

func perCall(ns float64) string {
	switch {
	case ns == 0:
		return ""
	case ns < 1e3:
		return fmt.Sprintf("%.0f ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	default:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	}
}

func count(n uint64) string {
	if n == 0 {
		return ""
	}
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func byteSize(n uint64) string {
	switch {
	case n == 0:
		return ""
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	}
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
