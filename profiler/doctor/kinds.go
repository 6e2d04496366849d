package doctor

import (
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/ksym"
)

// Attach kinds, in the order doctor tries them. These are also the keys of
// Report.Unavailable. The names are profiler/kernel's.
const (
	AttachTpBTF       = kernel.TpBTF
	AttachRawTp       = kernel.RawTp
	AttachFentry      = kernel.Fentry
	AttachKprobe      = kernel.Kprobe
	AttachKprobeMulti = kernel.KprobeMulti
	AttachPerfEvent   = kernel.PerfEvent
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
