package exact

import (
	"errors"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/doctor"
)

// Doctor's reasons on the 6.18 development machines.
const (
	whyFentry = "fentry: load failed: operation not permitted (function tracing is locked down on this kernel; not RLIMIT_MEMLOCK, whatever cilium/ebpf's hint says)"
	whyKprobe = "kprobe: attach failed: no such file or directory (kernel built without CONFIG_KPROBES)"
)

func probeReturns(sel doctor.Selection, err error) Prober {
	return func() (doctor.Selection, error) { return sel, err }
}

func mustNotProbe(t *testing.T) Prober {
	return func() (doctor.Selection, error) {
		t.Error("a forced backend was probed")
		return doctor.Selection{}, nil
	}
}

func TestChooseAuto(t *testing.T) {
	for _, c := range []struct {
		name string
		sel  doctor.Selection
		want string
		why  []string
	}{
		{"6.1/6.12", doctor.Selection{Backend: "fentry"}, "fentry",
			[]string{"attribution: fentry (auto: the best rung this kernel offers)"}},
		{"no trampolines", doctor.Selection{Backend: "kprobe", Unavailable: map[string]string{"fentry": whyFentry}}, "kprobe",
			[]string{"attribution: kprobe (auto: load failed: operation not permitted", "[fentry]"}},
		{"6.18 here", doctor.Selection{Backend: "sampling", Unavailable: map[string]string{"fentry": whyFentry, "kprobe": whyKprobe}}, "sampling",
			[]string{"attribution: sampling (auto: ", "operation not permitted", "[fentry]; ", "kernel built without CONFIG_KPROBES) [kprobe]"}},
	} {
		ch, err := Choose("auto", probeReturns(c.sel, nil))
		if err != nil || ch.Backend != c.want {
			t.Errorf("%s: %+v, %v; want %s", c.name, ch, err, c.want)
			continue
		}
		why := ch.Why()
		if strings.Contains(why, "\n") {
			t.Errorf("%s: Why is not one line: %q", c.name, why)
		}
		for _, frag := range c.why {
			if !strings.Contains(why, frag) {
				t.Errorf("%s: Why %q lacks %q", c.name, why, frag)
			}
		}
		if len(ch.Unavailable) != len(c.sel.Unavailable) {
			t.Errorf("%s: unavailable %v", c.name, ch.Unavailable)
		}
	}
	// "" is auto.
	if ch, _ := Choose("", probeReturns(doctor.Selection{Backend: "fentry"}, nil)); ch.Requested != BackendAuto || ch.Backend != "fentry" {
		t.Errorf("empty request: %+v", ch)
	}
	// A probe that cannot run leaves sampling, with the reason.
	ch, err := Choose("auto", probeReturns(doctor.Selection{}, errors.New("read probe programs: boom")))
	if err != nil || ch.Backend != attrib.NameSampling || !strings.Contains(ch.Unavailable["fentry"], "boom") {
		t.Errorf("probe error: %+v, %v", ch, err)
	}
}

func TestChooseForced(t *testing.T) {
	for _, b := range []string{"fentry", "kprobe", "sampling"} {
		ch, err := Choose(b, mustNotProbe(t))
		if err != nil || ch.Backend != b || ch.Why() != "attribution: "+b+" (requested with --backend)" {
			t.Errorf("%s: %+v %q, %v", b, ch, ch.Why(), err)
		}
	}
	_, err := Choose("perf", mustNotProbe(t))
	if err == nil || err.Error() != `--backend "perf": unknown (use auto, sampling, fentry, kprobe)` {
		t.Errorf("unknown backend: %v", err)
	}
}

func TestFallbackLadder(t *testing.T) {
	// auto picked fentry (the probe passed) but attaching the real programs
	// failed: kprobe next, then sampling, each failure recorded.
	ch, _ := Choose("auto", probeReturns(doctor.Selection{Backend: "fentry"}, nil))
	ch, err := ch.Fail(errors.New("fentry: all 16 functions refused: load failed: operation not permitted"))
	if err != nil || ch.Backend != "kprobe" || !strings.Contains(ch.Unavailable["fentry"], "all 16 functions refused") {
		t.Fatalf("after fentry failed: %+v, %v", ch, err)
	}
	ch, err = ch.Fail(errors.New("kprobe: all 16 functions refused: attach failed: no such file or directory"))
	if err != nil || ch.Backend != "sampling" || ch.Exact() || len(ch.Unavailable) != 2 {
		t.Fatalf("after kprobe failed: %+v, %v", ch, err)
	}
	if _, err := ch.Fail(errors.New("perf_event_open: EACCES")); err == nil {
		t.Error("no rung below sampling, but no error")
	}

	// Forced: one line, no fallback.
	forced, _ := Choose("fentry", mustNotProbe(t))
	_, err = forced.Fail(errors.New(whyFentry))
	if err == nil || err.Error() != "--backend fentry: "+whyFentry {
		t.Errorf("forced failure: %v", err)
	}
}
