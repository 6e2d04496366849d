package run

import (
	"os"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/attrib"
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

func openAttribution(sess *profiler.Session, o Options) (*attribution, error) {
	if o.Attribution == nil {
		return nil, nil
	}
	b, skipped, err := attrib.Open(sess, *o.Attribution)
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

// annotate fills the sample's categories, stacks and backend from the
// readings around the run.
func (a *attribution) annotate(s *sample, threads []workload.Thread, iv profiler.Interval) {
	if a == nil {
		return
	}
	role := map[int]workload.Role{}
	for _, th := range threads {
		role[th.TID] = th.Role
	}
	cats := a.b.Categories(iv, a.r0, a.r1)
	sides := map[workload.Role][]profiler.ThreadDelta{}
	for _, td := range iv.Threads {
		if r, ok := role[td.Info.TID]; ok {
			sides[r] = append(sides[r], td)
		}
	}
	attrib.FillEntry(&s.cell.Sender, sides[workload.RoleSender], cats)
	attrib.FillEntry(&s.cell.Receiver, sides[workload.RoleReceiver], cats)
	if ea, ok := a.b.(attrib.EntryAnnotator); ok {
		ea.AnnotateEntry(&s.cell.Sender, sides[workload.RoleSender], a.r0, a.r1)
		ea.AnnotateEntry(&s.cell.Receiver, sides[workload.RoleReceiver], a.r0, a.r1)
	}
	attrib.Annotate(s.doc, a.b, a.r0, a.r1)
	for k, v := range a.skipped {
		s.doc.Backends.Unavailable[k] = v
	}
	st, ok := a.b.(attrib.Stacker)
	if !ok {
		return
	}
	name, pid := cellName(s.cell), os.Getpid()
	comm := s.cell.Sender.Comm
	stacks := attrib.WeightedStacks(iv, st.Stacks(a.r0, a.r1), func(th profiler.ThreadDelta) (string, int, string, bool) {
		r, ok := role[th.Info.TID]
		return comm, pid, string(r), ok
	}, false)
	for i := range stacks {
		stacks[i].Cell = name
	}
	s.doc.Stacks = stacks
}

func (a *attribution) Close() error {
	if a == nil {
		return nil
	}
	return a.b.Close()
}
