package doctor

import (
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/ksym"
)

// attachProbes are the attach-kind probes doctor runs, in order, before
// perf_event.
func attachProbes(syms ksym.Names) []kernel.AttachProbe {
	return []kernel.AttachProbe{kernel.TpBTFProbe, kernel.RawTpProbe, kernel.FentryProbe, kernel.KprobeProbe, kernel.KprobeMultiProbe(syms)}
}

// attachCheck is one attach-kind probe's result as a check.
func attachCheck(kind string, r kernel.Result) Check {
	return Check{Name: kind, Kind: KindAttach, Status: r.Status, Detail: r.Detail}
}
