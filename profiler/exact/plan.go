package exact

import (
	"fmt"
	"sort"

	"github.com/cilium/ebpf/btf"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/ksym"
)

// KernelInfo is what the running kernel has, for Plan.
type KernelInfo struct {
	// Symbols are the text symbols of /proc/kallsyms; nil when unreadable
	// (then the kernel is left to say what is missing).
	Symbols ksym.Names
	// BTFArgs maps a function name to the argument count of each BTF
	// function of that name; nil when the kernel has no BTF.
	BTFArgs map[string][]int
}

// Plan picks the functions mode can try on this kernel: present in
// kallsyms and, for fentry, described by exactly one BTF prototype with
// the arguments the fexit program reads. skipped maps each other function
// to the reason.
func Plan(mode string, funcs []Function, k KernelInfo) (try []Function, skipped map[string]string) {
	skipped = map[string]string{}
	for _, f := range funcs {
		if why := k.missing(mode, f); why != "" {
			skipped[f.Name] = why
			continue
		}
		try = append(try, f)
	}
	return try, skipped
}

func (k KernelInfo) missing(mode string, f Function) string {
	if k.Symbols != nil && !k.Symbols[f.Name] {
		return "not in /proc/kallsyms (inlined or absent on this build)"
	}
	if mode != kernel.Fentry {
		return ""
	}
	if k.BTFArgs == nil {
		return "no kernel BTF: fentry needs the function's prototype"
	}
	protos := k.BTFArgs[f.Name]
	switch {
	case len(protos) == 0:
		return "no BTF prototype (fentry cannot attach without one)"
	case len(protos) > 1:
		return fmt.Sprintf("%d BTF functions share this name: ambiguous for fentry", len(protos))
	case protos[0] < f.MinArgs:
		return fmt.Sprintf("BTF prototype has %d arguments; the fexit program reads argument %d", protos[0], f.MinArgs)
	}
	return ""
}

// ReadKernelInfo reads kallsyms and the BTF prototypes of funcs. Errors
// leave the corresponding field nil.
func ReadKernelInfo(funcs []Function) KernelInfo {
	var k KernelInfo
	if tab, err := ksym.Read(); err == nil && len(tab.Names) > 0 {
		k.Symbols = tab.Names
	}
	spec, err := bpf.KernelBTF.Kernel() // decoded once per process
	if err != nil {
		return k
	}
	k.BTFArgs = map[string][]int{}
	for _, f := range funcs {
		types, err := spec.AnyTypesByName(f.Name)
		if err != nil {
			continue
		}
		for _, t := range types {
			fn, ok := t.(*btf.Func)
			if !ok {
				continue
			}
			if proto, ok := fn.Type.(*btf.FuncProto); ok {
				k.BTFArgs[f.Name] = append(k.BTFArgs[f.Name], len(proto.Params))
			}
		}
	}
	return k
}

// Select returns the functions named in names (all when empty), in table
// order, or an error naming an unknown one.
func Select(names []string) ([]Function, error) {
	if len(names) == 0 {
		return Functions, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		if _, ok := ByName(n); !ok {
			return nil, fmt.Errorf("unknown function %q (known: %s)", n, knownNames())
		}
		want[n] = true
	}
	var out []Function
	for _, f := range Functions {
		if want[f.Name] {
			out = append(out, f)
		}
	}
	return out, nil
}

func knownNames() string {
	var names []string
	for _, f := range Functions {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}
