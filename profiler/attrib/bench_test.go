package attrib

import (
	"testing"
	"time"

	"github.com/zcprof/zcprof/profiler"
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

// BenchmarkSamplingOverhead: the sampler's cost at the default rate, two
// ways, side by side in one run: its BPF run time as a share of the
// targets' measured CPU (what overhead.share reports), and the A/B ratio of
// CPU per MiB moved with and without sampling (which also counts the timer
// interrupts themselves).
func BenchmarkSamplingOverhead(b *testing.B) {
	requireBPF(b)
	for i := 0; i < b.N; i++ {
		const d = 2 * time.Second
		base := runAccountingOnly(b, benchConfig(d))
		run := runSampled(b, benchConfig(d), DefaultHz)
		cpu := measured(run.iv)
		share := float64(run.smpRunNS) / float64(cpu)
		perMiBBase := float64(measured(base.iv)) / (float64(base.res.SentBytes()) / (1 << 20))
		perMiB := float64(cpu) / (float64(run.res.SentBytes()) / (1 << 20))
		b.ReportMetric(100*share, "sampler-bpf-%cpu")
		b.ReportMetric(float64(run.smpRunNS)/float64(max(run.smpRuns, 1)), "ns/sample")
		b.ReportMetric(perMiB/perMiBBase, "cpu/MiB-ratio")
		// Machine-independent bound: were the targets busy all the time,
		// every sample would be a target's (an unwind): cost per target
		// sample x rate. All run time is charged to target samples, so
		// this is an upper bound.
		var targetSamples uint64
		for _, n := range run.samples.Leaves {
			targetSamples += n
		}
		busy := float64(run.smpRunNS) / float64(max(targetSamples, 1)) * DefaultHz / 1e9
		b.ReportMetric(100*busy, "busy-target-bound-%cpu")
		b.Logf("busy-target bound: %.0f ns per target sample x %d Hz = %.2f%% of a busy CPU",
			float64(run.smpRunNS)/float64(max(targetSamples, 1)), DefaultHz, 100*busy)
		b.Logf("sampler: %d runs, %.0f ns each, %.3f%% of %.0f ms measured CPU; CPU per MiB %.0f µs sampled vs %.0f µs without (x%.3f)",
			run.smpRuns, float64(run.smpRunNS)/float64(max(run.smpRuns, 1)), 100*share, float64(cpu)/1e6,
			perMiB/1e3, perMiBBase/1e3, perMiB/perMiBBase)
	}
}

// BenchmarkCopyTxInterval: the width of the 95% interval of copy.tx in the
// sender's tx.write after a 3 s write run at the default rate, relative to
// the estimate (target under ±5%).
func BenchmarkCopyTxInterval(b *testing.B) {
	requireBPF(b)
	for i := 0; i < b.N; i++ {
		run := runSampled(b, benchConfig(3*time.Second), DefaultHz)
		threads := run.threads(workload.RoleSender)
		p := profiler.ProcessEntry(threads[0].Info.TGID, threads, false)
		FillPaths(p.Paths, threads, Estimate(run.iv, run.samples))
		c := category(findPath(p.Paths, "tx.write"), CopyTx)
		if c.CPUNS == 0 {
			b.Fatalf("no copy.tx in tx.write: %+v", findPath(p.Paths, "tx.write"))
		}
		rel := float64(c.CI95NS) / float64(c.CPUNS)
		b.ReportMetric(100*rel, "ci95-%of-copy.tx")
		b.Logf("copy.tx %.1f ms ±%.1f ms (±%.1f%%) of tx.write %.1f ms", float64(c.CPUNS)/1e6, float64(c.CI95NS)/1e6,
			100*rel, float64(findPath(p.Paths, "tx.write").CPUNS)/1e6)
	}
}

// runAccountingOnly is runSampled without the sampler (the A side).
func runAccountingOnly(b *testing.B, cfg workload.Config) *sampledRun {
	return runSampled(b, cfg, 0)
}
