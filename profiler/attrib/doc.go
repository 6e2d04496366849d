// Package attrib splits each path's exact CPU time into the categories of
// docs/architecture.md (copy.tx, copy.rx, copy.deferred, zc.pin, ...). Two kinds of
// backend do it: sampling (perf_event cpu-clock with kernel stacks,
// statistical, scaled by the exact accounting) and function-exact
// (fentry/kprobe). Both implement Backend.
//
// Code map: extension.go (Open walks the rungs it is given, Extension adds
// the backend's figures to every document), sampler.go (one cpu-clock
// perf_event per CPU with bpf/sampler.bpf.c, two-phase: leaves always, a
// subsample unwound), samples.go (one reading), rules.go and classify.go
// (stack -> category: the rule table and the interrupt-enable pile-ups),
// estimate.go (category shares with 95% intervals), early.go (samples a
// hypervisor delivered early; bpf/sampler.bpf.c also sets aside samples
// due before their task was switched in), weighted.go (stacks
// weighted by exact time, for pprof/folded/HTML), fill.go (categories into
// processes and the system row), pmu.go (whether a hardware PMU answers).
package attrib
