package profiler

import (
	"context"
	"os"
	"testing"

	"github.com/zcprof/zcprof/profiler/procfs"
	"github.com/zcprof/zcprof/workload"
)

// BenchmarkAccountingOverhead measures what the accounting costs, as ratios
// taken side by side in one run: a fixed 1 GiB loopback transfer (64 KiB
// writes, read receiver) with and without zcprof attached, interleaved, five
// pairs, median of the per-pair CPU ratios. CPU is the kernel's own
// sum_exec_runtime of the sender and receiver threads, so the probes' cost
// inside those threads is included, whoever measures it.
//
//	make bench   (or: go test -run '^$' -bench AccountingOverhead -benchtime 1x ./profiler/)
func BenchmarkAccountingOverhead(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	const pairs = 5
	cfg := workload.Config{Method: "write", RxMethod: "read", Size: 64 << 10, Streams: 1, Bytes: 1 << 30,
		SenderCPU: -1, ReceiverCPU: -1}
	var ratios, nsPerEvent, shares []float64
	for i := 0; i < b.N*pairs; i++ {
		base := transferCPU(b, cfg)
		with, iv := transferCPUProfiled(b, cfg)
		ratios = append(ratios, float64(with)/float64(base))
		if iv.BPFEvents > 0 {
			nsPerEvent = append(nsPerEvent, float64(iv.BPFRunNS)/float64(iv.BPFEvents))
		}
		var measured uint64
		for _, th := range iv.Threads {
			measured += th.MeasuredNS()
		}
		if measured > 0 {
			shares = append(shares, float64(iv.BPFRunNS)/float64(measured))
		}
	}
	b.ReportMetric(median(ratios), "cpu-ratio-with/without")
	b.ReportMetric(100*(median(ratios)-1), "extra-cpu-%")
	b.ReportMetric(median(nsPerEvent), "bpf-ns/event")
	b.ReportMetric(100*median(shares), "bpf-share-%")
}

// transferCPU runs one transfer and returns the sender's and receiver's
// sum_exec_runtime for it.
func transferCPU(b *testing.B, cfg workload.Config) uint64 {
	t, err := workload.Prepare(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	before := threadsRuntime(b, t.Threads())
	if _, err := t.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	return threadsRuntime(b, t.Threads()) - before
}

func transferCPUProfiled(b *testing.B, cfg workload.Config) (uint64, Interval) {
	t, err := workload.Prepare(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	var tids []int
	for _, th := range t.Threads() {
		tids = append(tids, th.TID)
	}
	// The accounting alone: byte classes and attribution have benchmarks of their own.
	sess, err := Open(Options{Target: Target{TIDs: tids}, ByteClasses: ByteClassesOff})
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	s0, err := sess.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	before := threadsRuntime(b, t.Threads())
	if _, err := t.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	cpu := threadsRuntime(b, t.Threads()) - before
	s1, err := sess.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	return cpu, Delta(s0, s1)
}

func threadsRuntime(b *testing.B, threads []workload.Thread) uint64 {
	var sum uint64
	for _, th := range threads {
		rt, err := procfs.ThreadRuntime(os.Getpid(), th.TID)
		if err != nil {
			b.Fatal(err)
		}
		sum += rt
	}
	return sum
}
