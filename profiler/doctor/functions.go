package doctor

import (
	"github.com/zcprof/zcprof/profiler/exact"
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/ksym"
)

// KeyFunctions are the fentry/kprobe targets: the callers that give exact
// time, and the copy routines that on distro kernels only show up in
// sampled stacks (fentry EBUSY, kprobe not found). They are the
// function-exact backend's table, exact.Functions.
func KeyFunctions() []string {
	names := make([]string, 0, len(exact.Functions))
	for _, f := range exact.Functions {
		names = append(names, f.Name)
	}
	return names
}

const insteadSampled = "its share comes from perf_event sampling of kernel stacks"

// checkFunctions reports each function: absent from kallsyms, attached
// with fentry (else kprobe), or present but not tried because neither
// attach kind works on this kernel. Each function is attached on its own,
// so that one refusal (EBUSY on the copy routines) does not hide the rest.
func checkFunctions(p *kernel.Probes, e kernel.Env, funcs []string, syms ksym.Names, fentry, kprobe bool) []Check {
	var out []Check
	for _, fn := range funcs {
		c := Check{Name: fn, Kind: KindFunction, Status: StatusUnavailable}
		switch {
		case syms != nil && !syms[fn]:
			c.Detail = "not in /proc/kallsyms (inlined or absent on this build)"
			c.Instead = "its cost is charged to its caller"
		case !fentry && !kprobe:
			c.Status = StatusDegraded
			c.Detail = "in /proc/kallsyms; not tried: fentry and kprobe unavailable"
			c.Instead = insteadSampled
		default:
			ok, detail := p.AttachFunction(e, fn, fentry, kprobe)
			c.Detail = detail
			if ok {
				c.Status = StatusOK
			} else {
				c.Instead = "exact time from its callers; " + insteadSampled
			}
		}
		out = append(out, c)
	}
	return out
}
