package attrib

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/taxonomy"
	"github.com/zcprof/zcprof/profiler/testenv"
	"github.com/zcprof/zcprof/workload"
)

func benchConfig(d time.Duration) workload.Config {
	return workload.Config{Method: workload.MethodWrite, RxMethod: workload.RxRead, Size: 1 << 20, Streams: 1,
		Duration: d, SenderCPU: -1, ReceiverCPU: -1}
}

// measured is the targets' exact on-CPU time and bytes of a run.
func measured(iv profiler.Interval) (ns uint64) {
	for _, th := range iv.Threads {
		ns += th.MeasuredNS()
	}
	return ns
}

// BenchmarkSamplingOverhead: the sampler's cost at the default rate, side
// by side in one run: its BPF run time as a share of the targets' measured
// CPU (what overhead.share reports), a machine-independent bound for a
// busy target, and the A/B ratio of CPU per MiB moved with and without
// sampling (which also counts the timer interrupts themselves), each the
// median of interleaved pairs (this machine's load varies).
func BenchmarkSamplingOverhead(b *testing.B) {
	requireBPF(b)
	testenv.RunStats(b) // the sampler's own run time
	for _, hz := range benchRates {
		b.Run(fmt.Sprintf("hz=%d", hz), func(b *testing.B) { samplingOverhead(b, hz) })
	}
}

// benchRates: the default and the rates around it, to see what a higher
// rate costs (timer interrupts are dear on a PVM guest).
var benchRates = []int{499, 999, 1999, DefaultHz}

func samplingOverhead(b *testing.B, hz int) {
	const pairs = 3
	for i := 0; i < b.N; i++ {
		const d = 2 * time.Second
		var shares, busies, ratios, perSample []float64
		for range pairs {
			base := runAccountingOnly(b, benchConfig(d))
			run := runSampled(b, benchConfig(d), hz)
			cpu := measured(run.iv)
			perMiBBase := float64(measured(base.iv)) / (float64(base.res.SentBytes()) / (1 << 20))
			perMiB := float64(cpu) / (float64(run.res.SentBytes()) / (1 << 20))
			// Were the targets busy all the time, every sample would be
			// a target's: cost per target sample x rate. All run time is
			// charged to target samples, so this is an upper bound.
			var targetSamples uint64
			for _, m := range []map[LeafKey]uint64{run.samples.Leaves, run.samples.EarlyLeaves} {
				for _, n := range m {
					targetSamples += n
				}
			}
			per := float64(run.smpRunNS) / float64(max(targetSamples, 1))
			shares = append(shares, float64(run.smpRunNS)/float64(cpu))
			busies = append(busies, per*float64(hz)/1e9)
			ratios = append(ratios, perMiB/perMiBBase)
			perSample = append(perSample, per)
			b.Logf("pair: sampler %.3f%% of %.0f ms measured CPU, %.0f ns per target sample (%d unwound of %d); CPU per MiB %.0f µs sampled vs %.0f µs without (x%.3f); sender kernel µs/MiB %.0f vs %.0f (where the interrupts' cost lands)",
				100*shares[len(shares)-1], float64(cpu)/1e6, per, run.samples.Unwound, targetSamples,
				perMiB/1e3, perMiBBase/1e3, perMiB/perMiBBase, senderKernelPerMiB(run), senderKernelPerMiB(base))
		}
		b.ReportMetric(100*median(shares), "sampler-bpf-%cpu")
		b.ReportMetric(100*median(busies), "busy-target-bound-%cpu")
		b.ReportMetric(median(perSample), "ns/target-sample")
		b.ReportMetric(median(ratios), "cpu/MiB-ratio")
	}
}

// senderKernelPerMiB is the sender's kernel time (syscalls and softirq)
// per MiB sent, in µs.
func senderKernelPerMiB(run *sampledRun) float64 {
	var ns uint64
	for _, th := range run.threads(workload.RoleSender) {
		e := profiler.ProcessEntry(th.Info.TGID, []profiler.ThreadDelta{th}, false)
		ns += e.CPU.KernelNS + e.CPU.SoftirqNS
	}
	return float64(ns) / 1e3 / (float64(run.res.SentBytes()) / (1 << 20))
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// BenchmarkCopyTxInterval: the width of the 95% interval of copy.tx in the
// sender's tx.write after a 3 s write run (target under ±5%), at the
// default rate and the others of benchRates, beside the width the same run
// would give from its unwound samples alone (what one-phase sampling at the
// unwind rate gives).
func BenchmarkCopyTxInterval(b *testing.B) {
	requireBPF(b)
	for _, hz := range benchRates {
		b.Run(fmt.Sprintf("hz=%d", hz), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				run := runSampled(b, benchConfig(3*time.Second), hz)
				two := copyTx(b, run, run.samples)
				one := copyTx(b, run, &Samples{Counts: run.samples.Counts})
				rel := float64(two.CI95NS) / float64(two.CPUNS)
				b.ReportMetric(100*rel, "ci95-%of-copy.tx")
				b.ReportMetric(100*float64(one.CI95NS)/float64(one.CPUNS), "unwound-only-ci95-%")
				withEarly := txPath(run, run.samples.WithEarly())
				b.Logf("copy.tx %.1f ms ±%.1f ms (±%.1f%%); from the %d unwound samples alone %.1f ms ±%.1f%%; tcp.tx %.1f ms; %.0f%% of tx.write's samples came early (counted, copy.tx %.1f ms, tcp.tx %.1f ms); %.0f%% of the rest at an irq-enable",
					float64(two.CPUNS)/1e6, float64(two.CI95NS)/1e6, 100*rel, run.samples.Unwound,
					float64(one.CPUNS)/1e6, 100*float64(one.CI95NS)/float64(one.CPUNS),
					float64(txCategory(run, TCPTx).CPUNS)/1e6, 100*earlyShare(run),
					float64(category(withEarly, CopyTx).CPUNS)/1e6, float64(category(withEarly, TCPTx).CPUNS)/1e6, 100*irqEnableShare(run))
			}
		})
	}
}

// copyTx is the sender's copy.tx in tx.write estimated from s.
func copyTx(b *testing.B, run *sampledRun, s *Samples) report.Category {
	c := txCategoryFrom(run, s, CopyTx)
	if c.CPUNS == 0 {
		b.Fatalf("no copy.tx in the sender's tx.write")
	}
	return c
}

// txCategory is a category of the sender's tx.write.
func txCategory(run *sampledRun, name string) report.Category {
	return txCategoryFrom(run, run.samples, name)
}

func txCategoryFrom(run *sampledRun, s *Samples, name string) report.Category {
	return category(txPath(run, s), name)
}

// txPath is the sender's tx.write with categories estimated from s.
func txPath(run *sampledRun, s *Samples) report.Path {
	threads := run.threads(workload.RoleSender)
	p := profiler.ProcessEntry(threads[0].Info.TGID, threads, false)
	FillPaths(p.Paths, threads, Estimate(run.iv, s))
	return findPath(p.Paths, "tx.write")
}

// irqEnableShare is the share of the sender's tx.write samples taken where
// interrupts came back on (the PMU-less pile-ups).
func irqEnableShare(run *sampledRun) float64 {
	var all, pile uint64
	for k, n := range run.samples.Leaves {
		if run.roles[k.Key.Gen] == workload.RoleSender && k.Key.Path.String() == "tx.write" && k.Key.Ctx == taxonomy.CtxTask {
			all += n
			if strings.Contains(k.Leaf, "irq_enable") {
				pile += n
			}
		}
	}
	return float64(pile) / float64(max(all, 1))
}

// earlyShare is the share of the sender's tx.write samples that came early
// (Samples.EarlyLeaves).
func earlyShare(run *sampledRun) float64 {
	var all, early uint64
	for k, n := range run.samples.Leaves {
		if run.roles[k.Key.Gen] == workload.RoleSender && k.Key.Path.String() == "tx.write" && k.Key.Ctx == taxonomy.CtxTask {
			all += n
		}
	}
	for k, n := range run.samples.EarlyLeaves {
		if run.roles[k.Key.Gen] == workload.RoleSender && k.Key.Path.String() == "tx.write" && k.Key.Ctx == taxonomy.CtxTask {
			early += n
		}
	}
	return float64(early) / float64(max(all+early, 1))
}

// runAccountingOnly is runSampled without the sampler (the A side).
func runAccountingOnly(b *testing.B, cfg workload.Config) *sampledRun {
	return runSampled(b, cfg, 0)
}
