package doctor

import (
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
)

// SelectAttribution is the cheap check behind `--backend auto`: one
// trivial fentry program, then one kprobe, on tcp_sendmsg (loaded,
// attached, detached and closed before it returns). It picks "fentry",
// else "kprobe", else "sampling"; Unavailable says why each skipped rung
// was skipped, in doctor's words. perf_event is not probed here: the
// sampler reports its own failure when it starts.
func SelectAttribution() (Selection, error) {
	s := Selection{Backend: BackendSampling, Unavailable: map[string]string{}}
	_ = rlimit.RemoveMemlock()
	e := probeEnv()
	p, err := newProbeSet()
	if err != nil {
		return s, err
	}
	defer p.Close()
	why := p.attachOne(e, AttachFentry, progFentry, "tcp_sendmsg", func(prog *ebpf.Program) (link.Link, error) {
		return link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceFEntry})
	})
	if why == "" {
		s.Backend = BackendFentry
		return s, nil
	}
	s.Unavailable[AttachFentry] = why
	why = p.attachOne(e, AttachKprobe, progKprobe, "", func(prog *ebpf.Program) (link.Link, error) {
		return link.Kprobe("tcp_sendmsg", prog, nil)
	})
	if why == "" {
		s.Backend = BackendKprobe
		return s, nil
	}
	s.Unavailable[AttachKprobe] = why
	return s, nil
}

var (
	envOnce   sync.Once
	cachedEnv env
)

// probeEnv is what explanations depend on, read once per process.
func probeEnv() env {
	envOnce.Do(func() {
		cfg, _, _ := readKernelConfig(kernelRelease())
		cachedEnv = env{
			privileged: Privileged() == nil,
			config:     cfg,
			lockdown:   readLockdown(),
			paranoid:   readSysctl("kernel.perf_event_paranoid"),
		}
	})
	return cachedEnv
}

// Describe turns a load or attach error of the given attach kind ("fentry",
// "kprobe", ...) into doctor's one line: "<kind>: <stage> failed: <kernel
// error> (<why>)". Other packages that attach programs use it so that a
// refusal reads the same everywhere.
func Describe(kind, stage string, err error) string {
	return probeEnv().describe(kind, stage, err)
}
