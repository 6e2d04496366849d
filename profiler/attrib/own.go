package attrib

import (
	"strings"
	"sync"

	"github.com/cilium/ebpf"

	"github.com/zcprof/zcprof/bpf"
)

// zcprof's own samples. Every program of the accounting, byte-class,
// softirq-owner and sampler objects times its runs and its hook's dispatch
// and counts them as the thread's probe time, cut out of the path's exact
// time (bpf/common.h). A sample taken inside one of them, or in the
// dispatch of a hook only they were found on, is of time the path no
// longer holds: it is left out of the path's shares (the `tracing`
// category keeps other tools' BPF programs, and the tracing machinery
// whose program is not known).

// ownCategory marks zcprof's own samples inside the estimators; it is never
// reported (not in CategoryNames).
const ownCategory = "[zcprof]"

// ownSpecs are the objects whose programs time themselves.
var ownSpecs = []func() (*ebpf.CollectionSpec, error){
	bpf.LoadAccounting, bpf.LoadZcbytes, bpf.LoadSoftirqOwner, bpf.LoadSampler,
}

// ownNames are those objects' program names and the tracepoints they attach
// to (tp_btf/raw_tp sections), read once from the compiled objects.
var ownNames = sync.OnceValues(func() (progs, hooks map[string]bool) {
	progs, hooks = map[string]bool{}, map[string]bool{}
	for _, load := range ownSpecs {
		spec, err := load()
		if err != nil {
			continue // the loader reports it; nothing is ours then
		}
		for name, p := range spec.Programs {
			progs[name] = true
			if _, tp, ok := strings.Cut(p.SectionName, "/"); ok &&
				(strings.HasPrefix(p.SectionName, "tp_btf/") || strings.HasPrefix(p.SectionName, "raw_tp/")) {
				hooks[tp] = true
			}
		}
	}
	return progs, hooks
})

// bpfProgName is the program name of a JIT image's symbol,
// bpf_prog_<16 hex tag>_<name> (frame normalized).
func bpfProgName(frame string) (string, bool) {
	rest, ok := strings.CutPrefix(frame, "bpf_prog_")
	if !ok || len(rest) < 18 || rest[16] != '_' {
		return "", false
	}
	for _, c := range rest[:16] {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return "", false
		}
	}
	return rest[17:], true
}

// isOwnProg says whether a program name is one of ours. Without BTF the
// kernel names a program by its first 15 characters.
func isOwnProg(name string, progs map[string]bool) bool {
	if progs[name] {
		return true
	}
	if len(name) != 15 {
		return false
	}
	for p := range progs {
		if strings.HasPrefix(p, name) {
			return true
		}
	}
	return false
}

// dispatchHook is the tracepoint a BPF dispatch frame serves
// (__bpf_trace_<tp>, __traceiter_<tp>).
func dispatchHook(frame string) (string, bool) {
	if tp, ok := strings.CutPrefix(frame, "__bpf_trace_"); ok {
		return tp, true
	}
	return strings.CutPrefix(frame, "__traceiter_")
}

// Own says whether a folded stack (root first) was sampled in zcprof's own
// programs: its innermost BPF program is ours, or it has none and its
// innermost dispatch frame serves a hook of ours.
func Own(stack string) bool { return defaultClassifier.Own(stack) }

// Own is the Classifier's cached Own.
func (c *Classifier) Own(stack string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if own, ok := c.own[stack]; ok {
		return own
	}
	own := ownStack(stack)
	c.own[stack] = own
	return own
}

func ownStack(stack string) bool {
	if stack == StackUser || stack == StackUnknown || stack == "" {
		return false
	}
	progs, hooks := ownNames()
	frames := strings.Split(stack, ";")
	for i := len(frames) - 1; i >= 0; i-- {
		f := normalize(frames[i])
		if name, ok := bpfProgName(f); ok {
			return isOwnProg(name, progs)
		}
	}
	for i := len(frames) - 1; i >= 0; i-- {
		if tp, ok := dispatchHook(normalize(frames[i])); ok {
			return hooks[tp]
		}
	}
	return false
}

// classifyOwn is Classify with zcprof's own samples as ownCategory.
func classifyOwn(stack string) string {
	if Own(stack) {
		return ownCategory
	}
	return Classify(stack)
}

// withoutOwn takes zcprof's own share out of a context's shares: the rest
// are shares of the time the context still holds (n is scaled alike).
func withoutOwn(shares map[string]shareEstimate, n float64) (map[string]shareEstimate, float64) {
	own, ok := shares[ownCategory]
	if !ok {
		return shares, n
	}
	rest := 1 - own.p
	out := map[string]shareEstimate{}
	if rest <= 1e-12 {
		return out, 0
	}
	for c, e := range shares {
		if c != ownCategory {
			out[c] = shareEstimate{p: e.p / rest, variance: e.variance / (rest * rest)}
		}
	}
	return out, n * rest
}
