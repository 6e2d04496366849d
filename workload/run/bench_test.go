package run

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/testenv"
	"github.com/zcprof/zcprof/workload"
)

// benchPairs is how many interleaved generator/iperf3 pairs are run; the
// ratio reported is the median of the pairs' ratios.
const (
	benchPairs    = 7
	benchDuration = 2 * time.Second
	benchSize     = 64 << 10
)

// BenchmarkGeneratorVsIperf3 measures the generator's throughput against
// iperf3 on the same machine, side by side: write against `iperf3 -c`,
// sendfile against `iperf3 -Z`, both 64 KiB buffers, one stream on
// loopback, with no profiler attached (target: ratio >= 1); and write as
// `zcprof run --method write` measures it, with its default backends
// attached (target: ratio >= 0.9; its reported BPF share is logged too).
// Pairs alternate which goes first, so a drift of the machine hits both
// equally.
func BenchmarkGeneratorVsIperf3(b *testing.B) {
	bin := testenv.RequireTool(b, "iperf3")
	for _, c := range []struct {
		method   string
		flags    []string
		name     string
		measured bool
	}{
		{workload.MethodWrite, nil, "write/iperf3", false},
		{workload.MethodSendfile, []string{"-Z"}, "sendfile/iperf3-Z", false},
		{workload.MethodWrite, nil, "measured-write/iperf3", true},
	} {
		sub := c.method
		if c.measured {
			sub = "measured-" + c.method
		}
		b.Run(sub, func(b *testing.B) {
			for range b.N {
				var ratios, gens, refs []float64
				for i := range benchPairs {
					var g, r float64
					gen := func() { g = generatorBps(b, c.method) }
					if c.measured {
						gen = func() { g = measuredBps(b, c.method) }
					}
					ref := func() { r = iperf3Bps(b, bin, c.flags) }
					if i%2 == 0 {
						gen()
						ref()
					} else {
						ref()
						gen()
					}
					gens, refs, ratios = append(gens, g), append(refs, r), append(ratios, g/r)
					b.Logf("pair %d: %s %s, iperf3%v %s, ratio %.3f", i+1, c.method, report.Throughput(g), c.flags, report.Throughput(r), g/r)
				}
				b.ReportMetric(median(ratios), c.name)
				b.ReportMetric(median(gens)/1e9, "zcprof-Gbit/s")
				b.ReportMetric(median(refs)/1e9, "iperf3-Gbit/s")
			}
		})
	}
}

func generatorBps(b *testing.B, method string) float64 {
	b.Helper()
	tr, err := workload.Prepare(workload.Config{Method: method, Size: benchSize, Streams: 1, Duration: benchDuration,
		SenderCPU: -1, ReceiverCPU: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	res, err := tr.Run(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return res.ThroughputBps()
}

// measuredBps is the throughput of one cell of `zcprof run --method
// method` with the CLI's default backends (accounting, byte classes and
// attribution on auto), as its document gives it.
func measuredBps(b *testing.B, method string) float64 {
	b.Helper()
	testenv.RequireBPF(b)
	o := Defaults()
	o.Methods, o.Duration = []string{method}, benchDuration
	o.Backend, o.ByteClasses = "auto", "auto"
	o.Attribution = &attrib.Options{Backend: "auto"} // the CLI's --sample-hz auto
	d, err := Run(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	if len(d.Cells) != 1 {
		b.Fatalf("%d cells", len(d.Cells))
	}
	b.Logf("measured %s: reported BPF share %.1f%%", method, 100*d.Overhead.Share)
	return d.Cells[0].ThroughputBps
}

// iperf3Bps runs a one-off iperf3 server and a client against it and
// returns the receiver's throughput.
func iperf3Bps(b *testing.B, bin string, flags []string) float64 {
	b.Helper()
	port := freePort(b)
	srv := exec.Command(bin, "-s", "-1", "-B", "127.0.0.1", "-p", port)
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		srv.Process.Kill()
		srv.Wait()
	}()
	args := append([]string{"-c", "127.0.0.1", "-p", port, "-J", "-l", strconv.Itoa(benchSize),
		"-t", fmt.Sprintf("%.0f", benchDuration.Seconds())}, flags...)
	// The server needs a moment to listen; a refused client exits at once
	// (with -J, iperf3 3.12 reports the error in the JSON, status 0).
	var out []byte
	var err error
	for try := 0; try < 50; try++ {
		var res struct {
			End struct {
				SumReceived struct {
					BitsPerSecond float64 `json:"bits_per_second"`
				} `json:"sum_received"`
			} `json:"end"`
			Error string `json:"error"`
		}
		out, err = exec.Command(bin, args...).Output()
		if err == nil {
			err = json.Unmarshal(out, &res)
		}
		if err == nil && res.Error == "" && res.End.SumReceived.BitsPerSecond > 0 {
			return res.End.SumReceived.BitsPerSecond
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("iperf3 %v: %v\n%s", args, err, out)
	return 0
}

func freePort(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// cpuRounds is how often the whole method matrix runs for
// BenchmarkCPUPerMiB; each figure is the median over the rounds, and the
// rounds interleave the methods so that a drift of the machine hits all.
const cpuRounds = 3

// BenchmarkCPUPerMiB runs every send method at 64 KiB under the exact
// accounting and reports each side's CPU per MiB (service demand), and
// each method's sender and total figure relative to write(), so that the
// copy versus zero-copy saving is one number (below 1: cheaper than
// write).
func BenchmarkCPUPerMiB(b *testing.B) {
	requireBench(b)
	for range b.N {
		tx, rx, tput := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
		var overhead []float64
		for range cpuRounds {
			o := Defaults()
			o.Methods = workload.Methods
			o.Duration = benchDuration / 2
			d, err := Run(context.Background(), o)
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range d.Cells {
				tx[c.Method] = append(tx[c.Method], c.SenderNSPerMiB/1e3)
				rx[c.Method] = append(rx[c.Method], c.ReceiverNSPerMiB/1e3)
				tput[c.Method] = append(tput[c.Method], c.ThroughputBps)
			}
			overhead = append(overhead, 100*d.Overhead.Share)
		}
		wtx, wrx := median(tx[workload.MethodWrite]), median(rx[workload.MethodWrite])
		for _, m := range workload.Methods {
			mtx, mrx := median(tx[m]), median(rx[m])
			b.ReportMetric(mtx, m+"-tx-us/MiB")
			b.ReportMetric(mrx, m+"-rx-us/MiB")
			if m != workload.MethodWrite {
				b.ReportMetric(mtx/wtx, m+"-tx/write")
				b.ReportMetric((mtx+mrx)/(wtx+wrx), m+"-total/write")
			}
			b.Logf("%-13s %12s  tx %7.1f µs/MiB  rx %7.1f µs/MiB  (rounds: tx %v, rx %v)", m, report.Throughput(median(tput[m])),
				mtx, mrx, rounded(tx[m]), rounded(rx[m]))
		}
		b.ReportMetric(median(overhead), "bpf-overhead-%")
	}
}

func rounded(xs []float64) []int {
	out := make([]int, len(xs))
	for i, x := range xs {
		out[i] = int(x + 0.5)
	}
	return out
}

func requireBench(b *testing.B) {
	b.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("ZCPROF_REQUIRE_BPF") == "1" {
		b.Fatal("BPF benchmarks need root (ZCPROF_REQUIRE_BPF=1 is set)")
	}
	b.Skip("BPF benchmarks need root")
}

// BenchmarkRunDefaultShare is `zcprof run` as a user types it: the
// default matrix with the CLI's default backends (accounting, byte
// classes, attribution on auto), and beside it with --backend none, in
// interleaved rounds. It reports the BPF share each document gives
// (overhead.share: zcprof's handlers, their dispatch and the sampler's
// interrupts over the measured threads' CPU), so that the share of the
// sampler's timer interrupts shows apart from the rest.
func BenchmarkRunDefaultShare(b *testing.B) {
	requireBench(b)
	for range b.N {
		shares := map[string][]float64{}
		for i := range cpuRounds {
			for j, backend := range []string{"auto", "none"} {
				if i%2 == 1 {
					backend = []string{"none", "auto"}[j]
				}
				o := Defaults()
				o.Backend, o.ByteClasses = "auto", "auto"
				o.Attribution = &attrib.Options{Backend: backend}
				d, err := Run(context.Background(), o)
				if err != nil {
					b.Fatal(err)
				}
				shares[backend] = append(shares[backend], 100*d.Overhead.Share)
				b.Logf("round %d, --backend %s: BPF share %.2f%% (%s)", i+1, backend, 100*d.Overhead.Share, d.Backends.Attribution)
			}
		}
		b.ReportMetric(median(shares["auto"]), "bpf-share-%")
		b.ReportMetric(median(shares["none"]), "bpf-share-backend-none-%")
	}
}
