package metrics

import (
	"net"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zcprof/zcprof/profiler/report"
)

func TestCountersAddUpIntervals(t *testing.T) {
	e := New(2)
	d := &report.Document{
		Overhead: report.Overhead{BPFNS: 5e6, Events: 100, MapFull: map[string]uint64{"stats": 3}},
		Processes: []report.Process{
			{Comm: "nginx", CPU: report.CPU{ProbeNS: 3e8}, Paths: []report.Path{
				{Path: "tx.sendfile", Calls: 10, Bytes: 1 << 20, CPUNS: 2e9,
					Zerocopy: &report.Zerocopy{TxSplicedBytes: 1 << 20}},
				{Path: "softirq.net_rx", CPUNS: 5e8},
			}},
			{Comm: "redis", Paths: []report.Path{{Path: "user", CPUNS: 1e9}}},
			{Comm: "a", Paths: []report.Path{{Path: "user", CPUNS: 1e9}}},
			{Comm: "b", Paths: []report.Path{{Path: "user", CPUNS: 1e9}}},
		},
	}
	e.Add(d)
	e.Add(d)
	for _, c := range []struct {
		got, want float64
		what      string
	}{
		{testutil.ToFloat64(e.cpu.WithLabelValues("nginx", "tx.sendfile", "syscall")), 4, "nginx tx.sendfile seconds"},
		{testutil.ToFloat64(e.cpu.WithLabelValues("nginx", "softirq.net_rx", "softirq")), 1, "nginx softirq seconds"},
		{testutil.ToFloat64(e.probe.WithLabelValues("nginx")), 0.6, "nginx probe seconds"},
		{testutil.ToFloat64(e.classes.WithLabelValues("nginx", "tx.sendfile", "spliced")), 2 << 20, "spliced bytes"},
		{testutil.ToFloat64(e.bytes.WithLabelValues("nginx", "tx.sendfile")), 2 << 20, "syscall bytes"},
		{testutil.ToFloat64(e.calls.WithLabelValues("nginx", "tx.sendfile")), 20, "calls"},
		// The cap is 2: "a" and "b" are folded into "other".
		{testutil.ToFloat64(e.cpu.WithLabelValues(OtherLabel, "user", "user")), 4, "other user seconds"},
		{testutil.ToFloat64(e.bpf), 0.01, "bpf seconds"},
		{testutil.ToFloat64(e.mapFull.WithLabelValues("stats")), 6, "stats map full"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if n := testutil.CollectAndCount(e.cpu); n != 4 {
		t.Errorf("%d cpu series, want 4 (nginx x2, redis, other)", n)
	}
	problems, err := testutil.GatherAndLint(e.Registry())
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", err, problems)
	}
}

func TestAddressLoopbackByDefault(t *testing.T) {
	for in, want := range map[string]string{":9464": "127.0.0.1:9464", "0.0.0.0:9464": "0.0.0.0:9464", "[::1]:1": "[::1]:1"} {
		if got, err := Address(in); err != nil || got != want {
			t.Errorf("Address(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := Address("9464"); err == nil || !strings.Contains(err.Error(), "[HOST]:PORT") {
		t.Errorf("bare port: %v", err)
	}
}

func TestAddressInUseIsOneLine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Listen(ln.Addr().String())
	if err == nil || err.Error() != "--metrics "+ln.Addr().String()+": address already in use" {
		t.Errorf("err = %v", err)
	}
}
