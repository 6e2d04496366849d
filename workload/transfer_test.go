package workload

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zcprof/zcprof/profiler/testenv"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

// runTransfer prepares, runs and closes cfg, failing the test on errors.
func runTransfer(t *testing.T, cfg Config) Result {
	t.Helper()
	tr, err := Prepare(cfg)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	defer func() {
		if err := tr.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := tr.Run(ctx)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// defaults moves 16 MiB per stream, 4 MiB under emulation (make vmtest).
func defaults(method, rx string) Config {
	return Config{Method: method, RxMethod: rx, Size: 64 << 10, Streams: 1, Bytes: testenv.Pick[int64](16<<20, 4<<20),
		SenderCPU: -1, ReceiverCPU: -1}
}

// checkExact asserts every stream moved exactly cfg.Bytes, intact.
func checkExact(t *testing.T, cfg Config, res Result) {
	t.Helper()
	if len(res.Streams) != cfg.Streams {
		t.Fatalf("%d stream results, want %d", len(res.Streams), cfg.Streams)
	}
	for i, s := range res.Streams {
		if s.SentBytes != cfg.Bytes || s.ReceivedBytes != cfg.Bytes {
			t.Errorf("stream %d: sent %d received %d, want %d", i, s.SentBytes, s.ReceivedBytes, cfg.Bytes)
		}
		if s.PayloadErrors != 0 {
			t.Errorf("stream %d: %d payload errors", i, s.PayloadErrors)
		}
		if s.SendCalls == 0 || s.RecvCalls == 0 {
			t.Errorf("stream %d: send calls %d recv calls %d", i, s.SendCalls, s.RecvCalls)
		}
	}
	if res.Elapsed <= 0 || res.ThroughputBps() <= 0 {
		t.Errorf("elapsed %v throughput %v", res.Elapsed, res.ThroughputBps())
	}
}

func TestSmoke(t *testing.T) {
	requireRoot(t)
	cfg := defaults(MethodWrite, RxRead)
	res := runTransfer(t, cfg)
	checkExact(t, cfg, res)
	fmt.Printf("%+v %v %.1f Gbit/s\n", res.Total(), res.Elapsed, res.ThroughputBps()/1e9)
}

// TestCongestion: the sender's congestion control is what was asked for,
// the system's otherwise, and an unknown one is refused in one line.
func TestCongestion(t *testing.T) {
	requireRoot(t)
	sys, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		t.Fatal(err)
	}
	cfg := defaults(MethodWrite, RxRead)
	cfg.Bytes = 1 << 20
	if res := runTransfer(t, cfg); res.Total().Congestion != strings.TrimSpace(string(sys)) {
		t.Errorf("default congestion %q, system's is %q", res.Total().Congestion, sys)
	}
	cfg.Congestion = "reno" // built in, never a module
	res := runTransfer(t, cfg)
	checkExact(t, cfg, res)
	if got := res.Total().Congestion; got != "reno" {
		t.Errorf("congestion %q, want reno", got)
	}
	cfg.Congestion = "nosuchcc"
	// Connections are made in Prepare, so that is where it fails.
	if tr, err := Prepare(cfg); err == nil {
		tr.Close()
		t.Error("unknown congestion control accepted")
	} else if !strings.Contains(err.Error(), `congestion control "nosuchcc" is not available on this kernel`) || strings.Contains(err.Error(), "\n") {
		t.Errorf("unknown congestion control: %v", err)
	}
}

// TestMSS: --mss sets TCP_MAXSEG on both ends, and the result carries the
// MSS the handshake settled on: what was asked, less the timestamp option
// that every segment carries when timestamps are on (12 bytes).
func TestMSS(t *testing.T) {
	requireRoot(t)
	ts, err := os.ReadFile("/proc/sys/net/ipv4/tcp_timestamps")
	if err != nil {
		t.Fatal(err)
	}
	cfg := defaults(MethodWrite, RxRead)
	cfg.Bytes = 1 << 20
	res := runTransfer(t, cfg)
	if got := res.Total().MSS; got < 16000 {
		t.Errorf("loopback's own MSS: %d, want loopback's (64 KiB MTU)", got)
	}
	cfg.MSS = 1000
	res = runTransfer(t, cfg)
	checkExact(t, cfg, res)
	want := 1000
	if strings.TrimSpace(string(ts)) != "0" {
		want -= 12
	}
	if got := res.Total().MSS; got != want {
		t.Errorf("--mss 1000: the sender's MSS is %d, want %d (timestamps %s)", got, want, strings.TrimSpace(string(ts)))
	}
}

func numCPU() int { return max(1, len(cpusAllowed())) }
