package doctor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/kernel"
)

func sampleReport() Report {
	r := Report{
		Kernel: "6.18.44", CPUs: 2, HZ: 250,
		Settings: Settings{Lockdown: "integrity", Config: map[string]string{"CONFIG_HZ": "250"}, ConfigSource: "/proc/config.gz"},
		Checks: []Check{
			{Name: "btf", Kind: KindFeature, Status: StatusOK, Detail: "/sys/kernel/btf/vmlinux"},
			{Name: kernel.TpBTF, Kind: KindAttach, Status: StatusOK, Detail: "attached"},
			{Name: kernel.Fentry, Kind: KindAttach, Status: StatusUnavailable, Detail: "fentry: load failed: operation not permitted"},
			{Name: kernel.PerfEvent, Kind: KindAttach, Status: StatusOK},
			{Name: "sched_switch", Kind: KindTracepoint, Status: StatusOK},
			{Name: "_copy_to_iter", Kind: KindFunction, Status: StatusDegraded, Detail: "in /proc/kallsyms; not tried"},
		},
	}
	apply(kernel.Decide(passed(r.Checks)), &r)
	return r
}

func TestWriteText(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"Kernel 6.18.44, 2 CPUs, HZ=250",
		"lockdown", "integrity",
		"Attach kinds", "Tracepoints", "Functions",
		"fentry", "unavailable", "-> attribution falls back to perf_event sampling",
		"attribution  sampling  (fentry unavailable)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimRight(line, " ") != line {
			t.Errorf("trailing spaces in %q", line)
		}
	}
}

func TestJSON(t *testing.T) {
	b, err := json.Marshal(sampleReport())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"kernel", "cpus", "hz", "irq_time_accounting", "preempt_rt", "settings", "checks", "accounting", "attribution", "unavailable"} {
		if _, ok := doc[key]; !ok {
			t.Errorf("JSON lacks %q: %s", key, b)
		}
	}
	if doc["attribution"] != "sampling" {
		t.Errorf("attribution = %v", doc["attribution"])
	}
	if !strings.Contains(string(b), `"instead":"attribution falls back`) {
		t.Errorf("fentry check lacks its instead text: %s", b)
	}
}
