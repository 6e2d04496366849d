package run

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/softirqowner"
	"github.com/zcprof/zcprof/workload"
)

// A Side is one host's part of a run of a cell: the workload endpoints of
// the roles it plays there and one profiler session on exactly their
// threads, measured by that host's kernel. A local run is one side playing
// both roles: one kernel, one session (two sessions there would attach
// every program twice, and neither could tell whose socket a softirq they
// share served). A two-host run is a local side and the peer's, behind
// `zcprof serve` (workload/remote), which runs a LocalSide itself. The
// coordinator (measure) drives every kind through this interface only.
type Side interface {
	// Roles are the roles the side plays.
	Roles() []workload.Role
	// Prepare sets up the side's endpoints. A side that receives but
	// does not send listens and returns its ports, stream by stream; a
	// side that sends but does not receive connects to peerPorts.
	Prepare(ctx context.Context, cfg workload.Config, peerPorts []int) (ports []int, err error)
	// Start waits until every stream is connected, attaches the session
	// and takes the first snapshot. No byte has moved yet.
	Start(ctx context.Context) error
	// Run releases the side's threads, calls released once they are let
	// go, and returns when its streams are done (a receiver: at EOF).
	Run(ctx context.Context, released func()) error
	// Finish takes the last snapshot and returns the side's part.
	Finish(ctx context.Context) (SideResult, error)
	// Close releases everything the side created; safe on every path.
	Close() error
}

// SideResult is one side's part of one run of a cell, in the one model:
// the entries of the roles it played, what its own streams counted, and
// its session's document (host, backends, overhead, precision, warnings).
type SideResult struct {
	Sender   *report.Process `json:"sender,omitempty"`
	Receiver *report.Process `json:"receiver,omitempty"`
	// Counts are the side's streams' own counts (sender fields on a
	// sending side, receiver fields on a receiving one). ElapsedNS runs
	// from the side's release to its last stream's end.
	Counts    workload.StreamResult `json:"counts"`
	ElapsedNS int64                 `json:"elapsed_ns"`
	Doc       *report.Document      `json:"doc"`
	Stacks    []report.Stack        `json:"stacks,omitempty"`
}

// SideOptions configure a LocalSide.
type SideOptions struct {
	Backend     string          // accounting backend
	ByteClasses string          // byte-class backend (profiler.Options)
	Attribution *attrib.Options // category backend, or nil
	Threads     bool            // per-thread entries
	// Two-host runs only: this host's address for data, the peer's
	// (where a sender connects; the only address a receiver accepts
	// from), and the ports a receiver listens on.
	Local, Peer netip.Addr
	DataPorts   workload.PortRange
}

// LocalSide is a side on this host, in this process.
type LocalSide struct {
	roles []workload.Role
	o     SideOptions

	cfg      workload.Config
	tr       *workload.Transfer
	threads  []workload.Thread
	sess     *profiler.Session
	trk      *softirqowner.Tracker
	ownerErr error
	at       *attribution
	roleOf   map[uint32]workload.Role
	own0     softirqowner.Counts
	start    *profiler.Snapshot
	res      workload.Result
	closed   bool
}

// NewLocalSide returns a side playing roles on this host.
func NewLocalSide(o SideOptions, roles ...workload.Role) *LocalSide {
	return &LocalSide{roles: roles, o: o}
}

func (l *LocalSide) Roles() []workload.Role { return l.roles }

func (l *LocalSide) plays(r workload.Role) bool { return slices.Contains(l.roles, r) }

func (l *LocalSide) Prepare(_ context.Context, cfg workload.Config, peerPorts []int) ([]int, error) {
	l.cfg = cfg
	var err error
	switch {
	case l.plays(workload.RoleSender) && l.plays(workload.RoleReceiver):
		l.tr, err = workload.Prepare(cfg)
	case l.plays(workload.RoleReceiver):
		l.tr, err = workload.PrepareReceiver(cfg, workload.DataBind{Addr: l.o.Local, Ports: l.o.DataPorts, Peer: l.o.Peer})
	case l.plays(workload.RoleSender):
		l.tr, err = workload.PrepareSender(cfg, l.o.Peer, peerPorts)
	default:
		err = errors.New("a side plays no role")
	}
	if err != nil {
		l.tr = nil
		return nil, err
	}
	return l.tr.Ports(), nil
}

func (l *LocalSide) Start(context.Context) error {
	if err := l.tr.Connected(); err != nil {
		return err
	}
	l.threads = l.tr.Threads()
	tids := make([]int, len(l.threads))
	for i, th := range l.threads {
		tids[i] = th.TID
	}
	var err error
	if l.sess, err = profiler.Open(profiler.Options{Target: profiler.Target{TIDs: tids}, Backend: l.o.Backend, ByteClasses: l.o.ByteClasses, OwnerSplit: true,
		NoPinnedSends: !l.plays(workload.RoleSender) || !zerocopyMethod(l.cfg.Method),
		NoUringSends:  !l.plays(workload.RoleSender) || !uringMethod(l.cfg.Method),
		TxWritesCopy:  !l.plays(workload.RoleSender) || l.cfg.Method == workload.MethodWrite}); err != nil {
		return err
	}
	// The owner split is an extra: a kernel that refuses it loses the
	// split (reported under backends.unavailable), not the run.
	l.trk, l.ownerErr = softirqowner.Attach(l.sess)
	if l.ownerErr != nil {
		l.trk = nil
	}
	if l.at, err = openAttribution(l.sess, l.o.Attribution); err != nil {
		return err
	}
	l.roleOf = map[uint32]workload.Role{}
	for i, th := range l.threads {
		tag := softirqowner.OwnerFirst + uint32(i)
		if l.trk != nil {
			if err := l.trk.Register(th.Cookie, tag); err != nil {
				return err
			}
		}
		l.roleOf[tag] = th.Role
	}
	if l.own0, err = l.readOwners(); err != nil {
		return err
	}
	if err := l.at.begin(); err != nil {
		return err
	}
	l.start, err = l.sess.Snapshot()
	return err
}

func (l *LocalSide) readOwners() (softirqowner.Counts, error) {
	if l.trk == nil {
		return softirqowner.Counts{}, nil
	}
	return l.trk.Read()
}

func (l *LocalSide) Run(ctx context.Context, released func()) (err error) {
	released()
	l.res, err = l.tr.Run(ctx)
	return err
}

func (l *LocalSide) Finish(context.Context) (SideResult, error) {
	end, err := l.sess.Snapshot()
	if err != nil {
		return SideResult{}, err
	}
	own1, err := l.readOwners()
	if err != nil {
		return SideResult{}, err
	}
	if err := l.at.end(); err != nil {
		return SideResult{}, err
	}
	iv := profiler.Delta(l.start, end)
	var owners softirqowner.Counts
	var dropped uint64
	if l.trk != nil {
		owners, dropped = own1.Sub(l.own0), l.trk.Dropped()
	}
	r, err := l.build(iv, owners, dropped)
	if err != nil {
		return SideResult{}, err
	}
	if l.ownerErr != nil {
		r.Doc.Backends.Unavailable["softirq_owner"] = oneLine(l.ownerErr)
	}
	return r, nil
}

// build makes the side's entries and document from the interval.
func (l *LocalSide) build(iv profiler.Interval, owners softirqowner.Counts, dropped uint64) (SideResult, error) {
	byRole := threadsByRole(l.threads, iv)
	r := SideResult{Counts: l.res.Total(), ElapsedNS: int64(l.res.Elapsed)}
	var scope []report.CPU
	for _, role := range l.roles {
		tds := byRole[role]
		if len(tds) == 0 {
			return SideResult{}, fmt.Errorf("%s %s: no %s thread was accounted", l.cfg.Method, l.cfg.RxMethod, role)
		}
		p := profiler.ProcessEntry(pidOf(), tds, l.o.Threads)
		if owners != nil {
			p.SoftirqOwner = ownerSplit(role, tds, owners, l.roleOf)
		}
		byteclass.MarkUnavailable(&p, l.sess.ByteClassSourcesUnavailable())
		scope = append(scope, p.CPU)
		if role == workload.RoleSender {
			r.Sender = &p
		} else {
			r.Receiver = &p
		}
	}
	r.Doc = l.sess.NewDocument("run", iv, scope...)
	if dropped > 0 {
		r.Doc.Warnings = append(r.Doc.Warnings, "the softirq owner map was full: some segments were not counted")
	}
	l.at.annotate(&r, l.threads, iv, l.cfg)
	if l.at == nil && l.o.Attribution != nil && l.o.Attribution.Backend == kernel.None {
		r.Doc.Backends.Unavailable["attribution"] = "turned off (--backend none)"
	}
	return r, nil
}

func (l *LocalSide) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	var errs []error
	if l.at != nil {
		errs = append(errs, l.at.Close())
	}
	if l.trk != nil {
		errs = append(errs, l.trk.Close())
	}
	if l.sess != nil {
		errs = append(errs, l.sess.Close())
	}
	if l.tr != nil {
		errs = append(errs, l.tr.Close())
	}
	return errors.Join(errs...)
}
