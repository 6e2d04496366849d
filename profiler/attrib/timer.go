package attrib

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/zcprof/zcprof/bpf"
)

// Timer lateness (struct zc_timer in bpf/sampler.h): a program on
// hrtimer_expire_entry tells zc_sample how late its hrtimer ran, so that
// samples a hypervisor delivered early, at an exit, can be told from the
// rest. tp_btf first, raw_tp if the kernel refuses it; without either the
// sampler still works, with no sample counted early.

// unavailableTimer is the backends.unavailable key for a missing timer program.
const unavailableTimer = "sample timer lateness"

var timerPrograms = []string{bpf.SamplerProgZcTimerEntry, bpf.SamplerProgZcTimerEntryRaw}

// withoutTimerPrograms returns spec minus the timer programs, which are
// loaded one at a time (attachTimer) so that a refused one does not fail
// the sampler.
func withoutTimerPrograms(spec *ebpf.CollectionSpec) *ebpf.CollectionSpec {
	out := spec.Copy()
	for _, name := range timerPrograms {
		delete(out.Programs, name)
	}
	return out
}

// attachTimer loads and attaches the first timer program the kernel takes,
// sharing coll's maps, and returns it with its link.
func attachTimer(spec *ebpf.CollectionSpec, coll *ebpf.Collection) (*ebpf.Program, link.Link, error) {
	var errs []error
	for _, name := range timerPrograms {
		prog, l, err := attachTimerProgram(spec, coll, name)
		if err == nil {
			return prog, l, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	return nil, nil, errors.Join(errs...)
}

func attachTimerProgram(spec *ebpf.CollectionSpec, coll *ebpf.Collection, name string) (*ebpf.Program, link.Link, error) {
	ps := spec.Programs[name]
	if ps == nil {
		return nil, nil, errors.New("not in the object")
	}
	one := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{name: ps.Copy()}, Maps: map[string]*ebpf.MapSpec{}}
	repl := map[string]*ebpf.Map{}
	for mn := range spec.Maps {
		if m := coll.Maps[mn]; m != nil {
			one.Maps[mn] = spec.Maps[mn]
			repl[mn] = m
		}
	}
	c, err := ebpf.NewCollectionWithOptions(one, ebpf.CollectionOptions{MapReplacements: repl, Cache: bpf.KernelBTF})
	if err != nil {
		return nil, nil, err
	}
	prog := c.DetachProgram(name)
	c.Close()
	var l link.Link
	if ps.Type == ebpf.Tracing {
		l, err = link.AttachTracing(link.TracingOptions{Program: prog})
	} else {
		l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "hrtimer_expire_entry", Program: prog})
	}
	if err != nil {
		prog.Close()
		return nil, nil, err
	}
	return prog, l, nil
}
