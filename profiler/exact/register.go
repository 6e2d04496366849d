package exact

import (
	"fmt"
	"strings"
	"sync"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/kernel"
)

// probeOnce is doctor's cheap attach check, run at most once per process.
var probeOnce = sync.OnceValues(kernel.SelectAttribution)

// Rungs are the function-exact backends for attrib.Open, in the ladder's
// order: fentry, then kprobe. attrib cannot import this package (it
// imports attrib); profiler/backends puts these rungs and the sampler's
// together.
func Rungs() []attrib.Rung {
	return []attrib.Rung{
		{Name: kernel.Fentry, Start: starter(kernel.Fentry, probeOnce)},
		{Name: kernel.Kprobe, Start: starter(kernel.Kprobe, probeOnce)},
	}
}

// Prober is doctor's cheap check (one trivial program per attach kind):
// `auto` asks it before loading 16 functions it would only see refused.
type Prober func() (kernel.Selection, error)

// refusedByProbe returns doctor's reason when its probe says mode cannot
// work here ("" when it may, or when the probe itself could not run: then
// attaching tells).
func refusedByProbe(mode string, probe Prober) string {
	sel, err := probe()
	if err != nil {
		return ""
	}
	return sel.Unavailable[mode]
}

// starter attaches mode, with a sampler beside it for the copy shares of
// callers whose copy routine is refused (all distro kernels refuse
// _copy_from_iter and _copy_to_iter). Without a sampler the backend still runs, and says so. Under
// auto, a mode doctor's probe refused fails at once with its reason; a
// mode asked for by name is always attached for real.
func starter(mode string, probe Prober) attrib.Starter {
	return func(sess *profiler.Session, o attrib.Options) (attrib.Backend, error) {
		if o.Backend == "" || o.Backend == kernel.Auto {
			if why := refusedByProbe(mode, probe); why != "" {
				return nil, fmt.Errorf("%s (doctor's probe)", why)
			}
		}
		t, err := Attach(sess, Options{Mode: mode})
		if err != nil {
			return nil, err
		}
		b := NewBackend(t, nil)
		if !needsShares(t) {
			return b, nil
		}
		// The share needs each sample's stack, so every sample is unwound:
		// at most FullStackHz, which keeps that under 1% of a busy CPU.
		hz := o.SampleHz
		if hz == 0 || hz > attrib.FullStackHz {
			hz = attrib.FullStackHz
		}
		s, err := attrib.StartUnwindingAll(sess, hz)
		if err != nil {
			b.noShares = "no sampler for the copy share inside exact callers: " + strings.TrimSpace(err.Error())
			return b, nil
		}
		b.sampled = &Sampled{Backend: s, Stacks: s.Stacks, Classify: attrib.Classify}
		b.ownSampler = true
		return b, nil
	}
}

// needsShares reports whether a traced caller's copy routine is not traced.
func needsShares(t *Tracer) bool {
	for _, c := range copyInside {
		if t.IsAttached(c.caller) && !t.IsAttached(c.routine) {
			return true
		}
	}
	return false
}
