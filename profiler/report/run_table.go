package report

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
)

// commonMSS is the senders' MSS if every cell's is the same, else 0 (each
// cell's is in its JSON).
func commonMSS(cells []Cell) int {
	mss := 0
	for i, c := range cells {
		if c.Workload == nil || (i > 0 && c.Workload.MSS != mss) {
			return 0
		}
		mss = c.Workload.MSS
	}
	return mss
}

// WriteRunTable renders a `zcprof run` document: one row per cell and side,
// then the verdicts.
func WriteRunTable(w io.Writer, d *Document) error {
	bw := &errWriter{w: w}
	topo := ""
	if len(d.Cells) > 0 {
		topo = d.Cells[0].Topology
		if w := d.Cells[0].Workload; w != nil && w.Congestion != "" {
			topo += "  tcp " + w.Congestion
		}
		if mss := commonMSS(d.Cells); mss > 0 {
			topo += fmt.Sprintf("  mss %d", mss)
		}
	}
	bw.printf("zcprof run  %s  %d cell(s), %s measured  accounting: %s (exact)  attribution: %s\n",
		topo, len(d.Cells), Seconds(d.DurationNS), d.Backends.Accounting, attributionName(d.Backends))
	if why := AttributionWhy(d.Backends); why != "" {
		bw.printf("attribution: %s\n", why)
	}
	bw.printf("%s\n", OverheadLine(d.Overhead))
	for _, h := range SideHosts(d) {
		bw.printf("%s\n", h)
	}
	bw.printf("\n")
	for _, note := range d.Backends.Mounted {
		bw.printf("note: %s\n", note)
	}

	tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CELL\tTHROUGHPUT\tSIDE\tCPU s\tCORE\tµs/MiB\tSYSCALL\tSOFTIRQ (OWN/PEER)\tUSER\tIRQ\tTIMES() USR/SYS\tZERO-COPY")
	for _, c := range d.Cells {
		for i, side := range c.Sides() {
			name, tput := "", ""
			if i == 0 {
				name = fmt.Sprintf("%s→%s %s ×%d", c.Method, c.RxMethod, SizeString(c.Size), c.Streams)
				tput = Throughput(c.ThroughputBps) + plusMinus(c.Stats, "throughput_bps")
			}
			cpu := side.Process.CPU
			elapsed := uint64(0)
			if c.Workload != nil {
				elapsed = c.Workload.ElapsedNS
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s/%s\t%s\n",
				name, tput, side.Name, secs(cpu.OnCPUNS), plusMinus(c.Stats, side.Name+".on_cpu_ns"),
				Percent(cpu.OnCPUNS, elapsed), side.NSPerMiB/1e3, secs(cpu.KernelNS), softirqSplit(side.Process),
				secs(cpu.UserNS), secs(cpu.HardirqNS), secs(cpu.TimesUserNS), secs(cpu.TimesSystemNS),
				zerocopyFact(c, i == 0))
			for _, th := range side.Process.Threads {
				tc := th.CPU
				fmt.Fprintf(tw, "\t\t  %s (%d)\t%s\t%s\t\t%s\t%s\t%s\t%s\t%s/%s\t\n",
					th.Comm, th.TID, secs(tc.OnCPUNS), Percent(tc.OnCPUNS, elapsed), secs(tc.KernelNS), secs(tc.SoftirqNS),
					secs(tc.UserNS), secs(tc.HardirqNS), secs(tc.TimesUserNS), secs(tc.TimesSystemNS))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	bw.printf("\nCPU: exact on-CPU seconds of each side's threads (CORE: share of one core over the transfer); µs/MiB: service demand.\n")
	bw.printf("SOFTIRQ: all softirq work run inside the side's threads; OWN/PEER: the part of its NET_RX work done for its own side's or the peer's sockets (estimate).\n")
	bw.printf("TIMES(): what times()/getrusage (ttcp, iperf3) report for the same threads: tick-sampled, softirq included as system time.\n")
	if len(d.Cells) > 0 {
		bw.printf("\nverdicts:\n")
	}
	for _, c := range d.Cells {
		name := fmt.Sprintf("%s→%s %s ×%d", c.Method, c.RxMethod, SizeString(c.Size), c.Streams)
		for _, v := range c.Verdicts {
			bw.printf("  %s: %s\n", name, v)
		}
	}
	writeRunInside(bw, d.Cells)
	writePrecision(bw, d.Precision)
	for _, warn := range append(UnattachedWarnings(d.Backends), d.Warnings...) {
		bw.printf("warning: %s\n", warn)
	}
	return bw.err
}

// insidePaths is how many paths of a side get their categories listed:
// the busiest split ones (the transfer's syscall path, NET_RX, ...; user
// time is not split).
const insidePaths = 3

// writeRunInside lists what the attribution backend found inside each
// side's busiest paths (categories, traced functions).
func writeRunInside(bw *errWriter, cells []Cell) {
	header := false
	for _, c := range cells {
		name := fmt.Sprintf("%s→%s %s ×%d", c.Method, c.RxMethod, SizeString(c.Size), c.Streams)
		for _, side := range c.Sides() {
			paths := append([]Path(nil), side.Process.Paths...)
			sort.SliceStable(paths, func(i, j int) bool { return paths[i].CPUNS > paths[j].CPUNS })
			shown := 0
			for _, p := range paths {
				cats, fns := categoryCell(p), functionsCell(p)
				if shown == insidePaths || cats == "" && fns == "" {
					continue
				}
				shown++
				if !header {
					bw.printf("\ninside the kernel (≈ estimate ±95%% interval; exact figures without ≈):\n")
					header = true
				}
				bw.printf("  %s %s %s %s s: %s\n", name, side.Name, p.Path, secs(p.CPUNS), cats)
				if fns != "" {
					bw.printf("    traced: %s\n", fns)
				}
			}
		}
	}
}

// plusMinus is " ±x%" (the interval's half-width relative to the mean)
// when the figure has repeats.
func plusMinus(stats map[string]Stat, key string) string {
	s, ok := stats[key]
	if !ok || s.N < 2 {
		return ""
	}
	return PlusMinus(s.CI, s.Mean, 1)
}

func softirqSplit(p Process) string {
	out := secs(p.CPU.SoftirqNS)
	if so := p.SoftirqOwner; so != nil && so.NetRxNS > 0 {
		out += fmt.Sprintf(" (%s/%s)", secs(so.ForOwnNS), secs(so.ForPeerNS))
	}
	return out
}

// zerocopyFact is the short zero-copy column of one side: its measured
// byte classes (ZerocopyColumn), with the zero-copy completions the
// kernel reported to the sender.
func zerocopyFact(c Cell, sender bool) string {
	p := c.Receiver
	if sender {
		p = c.Sender
	}
	out := ZerocopyColumn(p.Zerocopy, sender)
	if w := c.Workload; sender && w != nil && w.ZCCompletions > 0 {
		out += fmt.Sprintf(", COPIED %s of %s", WholePercent(w.ZCCopied, w.ZCCompletions), Digits(w.ZCCompletions))
	}
	return out
}

// SideHosts says, for a two-host run, which host measured each side and
// with what: a line per side (none when both ran on this host). Every cell
// of a run has the same two hosts.
func SideHosts(d *Document) []string {
	if len(d.Cells) == 0 {
		return nil
	}
	var out []string
	for _, s := range d.Cells[0].Sides() {
		h := s.Process.Host
		if h == nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s on %s: kernel %s, %d CPUs; accounting: %s (exact)  attribution: %s; zcprof's handlers %s of its CPU there",
			s.Name, orNone(h.Hostname), h.Kernel, h.CPUs, h.Backends.Accounting, attributionName(h.Backends), Share(h.Overhead.Share)))
	}
	return out
}
