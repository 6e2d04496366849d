package run

import (
	"os"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/workload"
)

// attribution is a run's optional category backend (Options.Attribution:
// --pprof, --folded): categories for each side's paths and the sampled
// stacks weighted by exact time. A nil *attribution does nothing.
type attribution struct {
	b      attrib.Backend
	r0, r1 attrib.Reading
}

func openAttribution(sess *profiler.Session, o Options) (*attribution, error) {
	if o.Attribution == nil {
		return nil, nil
	}
	b, _, err := attrib.Open(sess, *o.Attribution)
	if err != nil || b == nil {
		return nil, err
	}
	return &attribution{b: b}, nil
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
	attrib.Annotate(s.doc, a.b)
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
