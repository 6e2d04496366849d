package profiler

import (
	"context"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/testenv"
	"github.com/zcprof/zcprof/workload"
)

// byteClassRun is one transfer under a session with the byte classes on or
// off: the targets' measured CPU, the bytes, and the byte-class programs'
// own run time and events.
type byteClassRun struct {
	cpuNS, bytes   uint64
	zcbNS, zcbRuns uint64
	accNS, accRuns uint64
}

func runByteClasses(tb testing.TB, cfg workload.Config, mode string) byteClassRun {
	tb.Helper()
	tr, err := workload.Prepare(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	defer tr.Close()
	var tids []int
	for _, th := range tr.Threads() {
		tids = append(tids, th.TID)
	}
	sess, err := Open(Options{Target: Target{TIDs: tids}, ByteClasses: mode})
	if err != nil {
		tb.Fatal(err)
	}
	defer sess.Close()
	start, err := sess.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	res, err := tr.Run(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	end, err := sess.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	var r byteClassRun
	for _, th := range Delta(start, end).Threads {
		r.cpuNS += th.MeasuredNS()
	}
	r.bytes = uint64(res.SentBytes())
	for name, st := range sess.ProgramStats() {
		if strings.HasPrefix(name, "zcb_") {
			r.zcbNS, r.zcbRuns = r.zcbNS+st[0], r.zcbRuns+st[1]
		} else {
			r.accNS, r.accRuns = r.accNS+st[0], r.accRuns+st[1]
		}
	}
	return r
}

func (r byteClassRun) cpuPerMiB() float64 { return float64(r.cpuNS) / (float64(r.bytes) / (1 << 20)) }

func median(xs []float64) float64 {
	sort.Float64s(xs)
	return xs[len(xs)/2]
}

// BenchmarkByteClassesOverhead: what the byte-class programs cost, two
// ways, side by side: their BPF run time as a share of the targets'
// measured CPU, and the A/B ratio of CPU per MiB with and without them
// (median of interleaved pairs), per send method.
func BenchmarkByteClassesOverhead(b *testing.B) {
	if os.Geteuid() != 0 {
		if os.Getenv("ZCPROF_REQUIRE_BPF") == "1" {
			b.Fatal("BPF benchmarks need root (ZCPROF_REQUIRE_BPF=1 is set)")
		}
		b.Skip("BPF benchmarks need root")
	}
	testenv.RunStats(b) // the byte-class programs' own run time
	const pairs = 3
	for i := 0; i < b.N; i++ {
		for _, m := range []string{workload.MethodWrite, workload.MethodSendfile, workload.MethodMsgZerocopy, workload.MethodIOUringZC} {
			cfg := workload.Config{Method: m, Size: 64 << 10, Bytes: 64 << 20, SenderCPU: -1, ReceiverCPU: -1}
			var ratios, shares, perEvent []float64
			for range pairs {
				off := runByteClasses(b, cfg, byteclass.Off)
				on := runByteClasses(b, cfg, "auto")
				ratios = append(ratios, on.cpuPerMiB()/off.cpuPerMiB())
				shares = append(shares, float64(on.zcbNS)/float64(on.cpuNS))
				perEvent = append(perEvent, float64(on.zcbNS)/float64(max(on.zcbRuns, 1)))
				b.Logf("%s: byte classes %d runs %.0f µs (%.0f ns each, %.3f%% of %.0f ms measured); accounting %.0f µs; CPU/MiB %.0f µs on vs %.0f µs off",
					m, on.zcbRuns, float64(on.zcbNS)/1e3, float64(on.zcbNS)/float64(max(on.zcbRuns, 1)), 100*float64(on.zcbNS)/float64(on.cpuNS),
					float64(on.cpuNS)/1e6, float64(on.accNS)/1e3, on.cpuPerMiB()/1e3, off.cpuPerMiB()/1e3)
			}
			b.ReportMetric(100*median(shares), m+"-bpf-%cpu")
			b.ReportMetric(median(perEvent), m+"-ns/event")
			b.ReportMetric(median(ratios), m+"-cpu/MiB-ratio")
		}
	}
}
