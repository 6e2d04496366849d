package kernel

import (
	"sync"

	"github.com/cilium/ebpf/rlimit"
)

// Selection is a backend choice and why the better rungs were skipped.
type Selection struct {
	Backend string `json:"backend"`
	// Unavailable maps each skipped backend to the kernel's reason, ready
	// for backends.unavailable in the zcprof/v1 JSON document.
	Unavailable map[string]string `json:"unavailable,omitempty"`
}

// SelectAttribution is the cheap check behind `--backend auto`: one
// trivial fentry program, then one kprobe, on tcp_sendmsg (loaded,
// attached, detached and closed before it returns). It picks "fentry",
// else "kprobe", else "sampling"; Unavailable says why each skipped rung
// was skipped, in doctor's words. perf_event is not probed here: the
// sampler reports its own failure when it starts.
func SelectAttribution() (Selection, error) {
	s := Selection{Backend: Sampling, Unavailable: map[string]string{}}
	_ = rlimit.RemoveMemlock()
	e := probeEnv()
	p, err := NewProbes()
	if err != nil {
		return s, err
	}
	defer p.Close()
	// The rungs above sampling, in the ladder's order.
	probes := map[string]AttachProbe{Fentry: FentryProbe, Kprobe: KprobeProbe}
	for _, rung := range AttributionLadder {
		a, ok := probes[rung]
		if !ok {
			break // sampling: not probed here
		}
		why := p.attachOnly(e, a)
		if why == "" {
			s.Backend = a.Kind
			return s, nil
		}
		s.Unavailable[a.Kind] = why
	}
	return s, nil
}

var (
	envOnce   sync.Once
	cachedEnv Env
)

// probeEnv is what explanations depend on, read once per process.
func probeEnv() Env {
	envOnce.Do(func() {
		cfg, _, _ := ReadConfig(Release())
		cachedEnv = Env{
			Privileged: Privileged() == nil,
			Config:     cfg,
			Lockdown:   Lockdown(),
			Paranoid:   Sysctl("kernel.perf_event_paranoid"),
		}
	})
	return cachedEnv
}

// Describe turns a load or attach error of the given attach kind ("fentry",
// "kprobe", ...) into doctor's one line: "<kind>: <stage> failed: <kernel
// error> (<why>)". Every package that attaches programs uses it so that a
// refusal reads the same everywhere.
func Describe(kind, stage string, err error) string {
	return probeEnv().Describe(kind, stage, err)
}
