package run

import (
	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/backends"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/workload"
)

// attribution is a run's category backend (Options.Attribution, --backend):
// categories for each side's paths, the traced functions of a
// function-exact backend, and the sampled stacks weighted by exact time. A
// nil *attribution does nothing.
type attribution struct {
	b      attrib.Backend
	r0, r1 attrib.Reading
	// skipped: the better rungs auto passed over, with the kernel's reason.
	skipped map[string]string
}

func openAttribution(sess *profiler.Session, o *attrib.Options) (*attribution, error) {
	if o == nil {
		return nil, nil
	}
	b, skipped, err := attrib.Open(sess, *o, backends.Attribution())
	if err != nil || b == nil {
		return nil, err
	}
	return &attribution{b: b, skipped: skipped}, nil
}

// begin and end take the readings before and after the run.
func (a *attribution) begin() (err error) {
	if a != nil {
		a.r0, err = a.b.Read()
	}
	return err
}

func (a *attribution) end() (err error) {
	if a != nil {
		a.r1, err = a.b.Read()
	}
	return err
}

// annotate fills the side's categories, stacks and backend from the
// readings around the run.
func (a *attribution) annotate(r *SideResult, threads []workload.Thread, iv profiler.Interval, cfg workload.Config) {
	if a == nil {
		return
	}
	role := map[int]workload.Role{}
	for _, th := range threads {
		role[th.TID] = th.Role
	}
	cats := a.b.Categories(iv, a.r0, a.r1)
	sides := threadsByRole(threads, iv)
	comm := ""
	for _, e := range []struct {
		p    *report.Process
		role workload.Role
	}{{r.Sender, workload.RoleSender}, {r.Receiver, workload.RoleReceiver}} {
		if e.p == nil {
			continue
		}
		attrib.FillEntry(e.p, sides[e.role], cats)
		if ea, ok := a.b.(attrib.EntryAnnotator); ok {
			ea.AnnotateEntry(e.p, sides[e.role], a.r0, a.r1)
		}
		if comm == "" {
			comm = e.p.Comm
		}
	}
	attrib.Annotate(r.Doc, a.b, a.r0, a.r1)
	for k, v := range a.skipped {
		r.Doc.Backends.Unavailable[k] = v
	}
	st, ok := a.b.(attrib.Stacker)
	if !ok {
		return
	}
	name, pid := cellName(report.Cell{Method: cfg.Method, RxMethod: cfg.RxMethod, Size: cfg.Size, Streams: cfg.Streams}), pidOf()
	stacks := attrib.WeightedStacks(iv, st.Stacks(a.r0, a.r1), func(th profiler.ThreadDelta) (string, int, string, bool) {
		r, ok := role[th.Info.TID]
		return comm, pid, string(r), ok
	}, false)
	for i := range stacks {
		stacks[i].Cell = name
	}
	r.Stacks = stacks
}

func (a *attribution) Close() error {
	if a == nil {
		return nil
	}
	return a.b.Close()
}
