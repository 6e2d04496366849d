// Package exact is the function-exact attribution backend: fentry/fexit
// (falling back to kprobe/kretprobe) on the key kernel functions of
// docs/architecture.md, with exact inclusive time (interrupts and off-CPU
// time removed), calls and bytes per thread generation, path, context and
// function (bpf/funcexact.bpf.c). Each function is loaded and attached on
// its own, so a refused function loses only itself, with the kernel's
// reason. Self times map onto the categories of the taxonomy; where a copy
// routine cannot be attached (Debian's 6.1/6.12 refuse _copy_from_iter),
// the copy's share of its exact caller comes from sampled stacks.
//
// Code map: functions.go (the traced functions and what each measures),
// plan.go (which of them this kernel can attach, from kallsyms and BTF),
// tracer.go (loads and attaches each function's fentry/fexit or
// kprobe/kretprobe pair, and the clock programs on sched_switch, softirq
// and irq entry/exit), snapshot.go (one reading of its maps), categories.go
// and share.go (self times into categories; the copy share from sampled
// stacks), report.go (functions[] and categories into the document),
// loss.go (calls the kernel skipped, as warnings), backend.go (the
// attrib.Backend), register.go (Rungs: fentry and kprobe for attrib.Open).
package exact
