package attrib

import (
	"strings"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// Stacker is a backend that keeps sampled stacks per accounting key (the
// sampler, and the exact backends' sampler beside them).
type Stacker interface {
	Stacks(prev, cur Reading) map[profiler.Key]map[string]uint64
}

// Owner names a thread's process and side in the stacks; ok false leaves
// the thread out.
type Owner func(th profiler.ThreadDelta) (process string, pid int, side string, ok bool)

// ByProcess is the Owner of `profile`: the thread's process.
func ByProcess(th profiler.ThreadDelta) (string, int, string, bool) {
	return th.Info.Comm, th.Info.TGID, "", true
}

// WeightedStacks gives every sampled stack of iv's threads its share of
// its context's exact time (context ns x stack samples / context samples);
// the stacks of a thread add up to its exact on-CPU time plus zcprof's own
// handler time, which has a stack of its own (FrameProbe). System contexts
// (interrupts while no target ran) are included when system is set.
func WeightedStacks(iv profiler.Interval, stacks map[profiler.Key]map[string]uint64, owner Owner, system bool) []report.Stack {
	var out []report.Stack
	add := func(k profiler.Key, ns uint64, proc string, pid int, side string) {
		if ns == 0 {
			return
		}
		path := reportPath(k)
		if k.Gen == 0 {
			path = k.Path.String()
		}
		// zcprof's own samples ran in time the context no longer holds
		// (probe time, shown as its own stack): the rest share its time.
		byStack := map[string]uint64{}
		var n uint64
		for st, c := range stacks[k] {
			if !Own(st) {
				byStack[st] = c
				n += c
			}
		}
		base := report.Stack{Process: proc, PID: pid, Side: side, Path: path}
		if k.Ctx == taxonomy.CtxProbe {
			s := base
			s.Frames, s.NS, s.Category = []string{report.FrameProbe}, float64(ns), Tracing
			out = append(out, s)
			return
		}
		if n == 0 {
			s := base
			s.Frames, s.NS, s.Category = []string{report.FrameUnsampled}, float64(ns), Other
			if path == taxonomy.PathUser.String() {
				s.Category = "user"
			}
			out = append(out, s)
			return
		}
		for stack, c := range byStack {
			s := base
			s.Frames = trimPileUp(strings.Split(stack, ";"))
			s.Samples = c
			s.NS = float64(ns) * float64(c) / float64(n)
			s.Category = Classify(stack)
			if stack == StackUser || path == taxonomy.PathUser.String() && k.Ctx == taxonomy.CtxTask {
				s.Category = "user"
			}
			out = append(out, s)
		}
	}
	for _, th := range iv.Threads {
		proc, pid, side, ok := owner(th)
		if !ok {
			continue
		}
		for pc, c := range th.Counters {
			if pc.Ctx.OnCPU() || pc.Ctx == taxonomy.CtxProbe {
				add(profiler.Key{Gen: th.Info.Gen, Path: pc.Path, Ctx: pc.Ctx}, c.NS, proc, pid, side)
			}
		}
	}
	if system {
		for pc, c := range iv.System {
			if pc.Ctx.OnCPU() || pc.Ctx == taxonomy.CtxProbe {
				add(profiler.Key{Gen: 0, Path: pc.Path, Ctx: pc.Ctx}, c.NS, "[system]", 0, "")
			}
		}
	}
	return out
}

// trimPileUp drops the pile-up frames at the inner end of a stack (where a
// timer sample held back by disabled interrupts lands, classify.go), so
// that the profile bills the sample to the code that ran with interrupts
// off, as the categories do.
func trimPileUp(frames []string) []string {
	n := len(frames)
	for n > 1 && defaultClassifier.pile[normalize(frames[n-1])] {
		n--
	}
	return frames[:n]
}
