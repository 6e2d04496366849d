package report

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

func sample() *Document {
	return &Document{
		Schema: Schema, Command: "profile", DurationNS: 2e9,
		Host:     Host{Kernel: "6.18.44", CPUs: 2, HZ: 250},
		Backends: Backends{Accounting: "tp_btf", Unavailable: map[string]string{"fentry": "EPERM"}, ProgramIDs: []uint32{7}},
		Overhead: Overhead{BPFNS: 2e6, Events: 10000, Share: 0.01, NSPerEvent: 200},
		Processes: []Process{{
			PID: 42, Comm: "iperf3",
			CPU: CPU{OnCPUNS: 1.2e9, UserNS: 0.1e9, KernelNS: 0.6e9, SoftirqNS: 0.5e9, SoftirqNetRxNS: 0.45e9,
				SchedstatNS: 1.19e9, SchedstatBoundaryNS: -2e6, TimesUserNS: 0.05e9, TimesSystemNS: 1.15e9},
			Paths: []Path{
				{Path: "tx.write", Calls: 1000, Bytes: 64 << 20, CPUNS: 0.6e9, SoftirqNS: 0.5e9,
					Softirq: map[string]uint64{"softirq.net_rx": 0.45e9, "softirq.net_tx": 0.05e9}, NSPerCall: 6e5, NSPerMiB: 9.4e6},
				{Path: "softirq.net_rx", Calls: 300, CPUNS: 0.45e9},
			},
			Zerocopy: &Zerocopy{TxBytes: 64 << 20, TxCopiedBytes: 64 << 20, Verdict: "copy"},
		}},
		Precision: &Precision{Checked: 3, Bound: "1% or 2ms", MeasuredNS: 1.2e9, SchedstatNS: 1.19e9, DiffNS: 10e6,
			Terms: PrecisionTerms{BoundaryNS: 2e6, IRQTimeNS: 7.5e6, Runs: 400}, ResidualNS: 0.5e6},
	}
}

func TestTableShowsWhereTheTimeWent(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTable(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"PID 42 iperf3: on-CPU 1.200 s (60.0% of a core)",
		"tx.write", "1,000", "64.0 MiB", "600.0 µs", "9.40 ms",
		"0.500 s (net_rx 0.450 s, net_tx 0.050 s)",
		"times(): user 0.050 s system 1.150 s",
		"times() reports 1.150 s of system time, of which 0.500 s was softirq work",
		"schedstat bills 0.002 s of its runs to tasks it woke",
		"accounting: tp_btf (exact)",
		"self-check: 3 thread(s), measured 1.200 s vs schedstat 1.190 s: +10.000 ms = boundary +2.000 ms + interrupts +7.500 ms + residual +0.500 ms (400 runs, 0 clamped)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// Exited processes summed by name (pid 0) say so, in the table and the
// JSON.
func TestTableNamesExitedProcessesSummed(t *testing.T) {
	d := sample()
	d.Processes = append(d.Processes, Process{Comm: "true", ExitedProcesses: 1234, CPU: CPU{OnCPUNS: 0.2e9}})
	var buf bytes.Buffer
	if err := WriteTable(&buf, d); err != nil {
		t.Fatal(err)
	}
	if want := "1,234 exited processes named true: on-CPU 0.200 s"; !strings.Contains(buf.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, buf.String())
	}
	raw, err := json.Marshal(d.Processes[1])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"pid":0,`)) || !bytes.Contains(raw, []byte(`"exited_processes":1234`)) || bytes.Contains(raw, []byte("Gens")) {
		t.Errorf("JSON %s", raw)
	}
}

// The header names the sampler's rate, which depends on the machine.
func TestTableNamesTheSampleRate(t *testing.T) {
	d := sample()
	d.Backends.Attribution, d.Backends.SampleHz = "sampling", 499
	var buf bytes.Buffer
	if err := WriteTable(&buf, d); err != nil {
		t.Fatal(err)
	}
	if want := "attribution: sampling at 499 Hz\n"; !strings.Contains(buf.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, buf.String())
	}
}

func TestJSONContract(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "host", "backends", "overhead", "processes"} {
		if _, ok := m[k]; !ok {
			t.Errorf("missing top-level %q", k)
		}
	}
	if m["schema"] != "zcprof/v1" {
		t.Errorf("schema %v", m["schema"])
	}
	p := m["processes"].([]any)[0].(map[string]any)
	for _, k := range []string{"pid", "comm", "cpu", "paths", "zerocopy"} {
		if _, ok := p[k]; !ok {
			t.Errorf("process lacks %q", k)
		}
	}
	cpu := p["cpu"].(map[string]any)
	for _, k := range []string{"on_cpu_ns", "user_ns", "kernel_ns", "softirq_ns", "hardirq_ns", "schedstat_ns", "times_user_ns", "times_system_ns"} {
		if _, ok := cpu[k]; !ok {
			t.Errorf("cpu lacks %q", k)
		}
	}
	path := p["paths"].([]any)[0].(map[string]any)
	for _, k := range []string{"path", "calls", "bytes", "cpu_ns", "softirq_ns", "categories"} {
		if _, ok := path[k]; !ok {
			t.Errorf("path lacks %q", k)
		}
	}
	ov := m["overhead"].(map[string]any)
	for _, k := range []string{"bpf_ns", "events", "share"} {
		if _, ok := ov[k]; !ok {
			t.Errorf("overhead lacks %q", k)
		}
	}
}

// The run table lists the categories of each side's busiest split paths
// (user time is not split and does not take a place), and says which
// attribution backend was used and why.
func TestRunTableInsideTheKernel(t *testing.T) {
	cats := func(name string, ns uint64) []Category {
		return []Category{{Category: name, CPUNS: ns, CI95NS: ns / 10}}
	}
	d := &Document{Schema: Schema, Command: "run", DurationNS: 3e9,
		Backends: Backends{Accounting: "tp_btf", Attribution: "sampling",
			Unavailable: map[string]string{"fentry": "fentry: load failed: operation not permitted", "kprobe": "kprobe: no CONFIG_KPROBES"}},
		Cells: []Cell{{Method: "write", RxMethod: "read", Size: 64 << 10, Streams: 1,
			Sender: Process{Paths: []Path{
				{Path: "user", CPUNS: 9e8},
				{Path: "tx.write", CPUNS: 8e8, Categories: cats("copy.tx", 8e8)},
				{Path: "softirq.net_rx", CPUNS: 3e8, Categories: cats("tcp.rx", 3e8)},
				{Path: "other", CPUNS: 2e8, Categories: cats("syscall", 2e8)},
				{Path: "wait", CPUNS: 1e8, Categories: cats("sched", 1e8)},
			}},
			Receiver: Process{Paths: []Path{{Path: "rx.read", CPUNS: 5e8, Categories: cats("copy.rx", 5e8)}}},
		}},
	}
	out := render(t, WriteRunTable, d)
	assertContains(t, out,
		"attribution: sampling because fentry: load failed: operation not permitted; kprobe: no CONFIG_KPROBES",
		"inside the kernel",
		"write→read 64K ×1 sender tx.write 0.800 s: copy.tx ≈800.0 ms ±80.0 ms (100%)",
		"sender softirq.net_rx 0.300 s: tcp.rx",
		"sender other 0.200 s: syscall",
		"receiver rx.read 0.500 s: copy.rx",
	)
	if strings.Contains(out, "sender wait") || strings.Contains(out, "sender user") {
		t.Errorf("more than three split paths, or user, listed:\n%s", out)
	}
}

// render runs a table writer on d.
func render(t *testing.T, write func(io.Writer, *Document) error, d *Document) string {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b, d); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// assertContains reports each wanted piece the output lacks.
func assertContains(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
