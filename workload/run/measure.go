package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/softirqowner"
	"github.com/zcprof/zcprof/workload"
)

const mib = 1 << 20

// sample is one run of one cell: the cell's figures and the session's
// document parts (overhead, precision, warnings, backends).
type sample struct {
	cell report.Cell
	doc  *report.Document
}

// measure prepares the transfer, opens a session on exactly its threads,
// runs it once between two snapshots and builds the cell. Everything it
// creates (threads, sockets, netns, temp file, programs) is released before
// it returns, on every path.
func measure(ctx context.Context, cfg workload.Config, o Options) (s sample, err error) {
	tr, err := workload.Prepare(cfg)
	if err != nil {
		return s, err
	}
	defer func() { err = errors.Join(err, tr.Close()) }()
	threads := tr.Threads()
	tids := make([]int, len(threads))
	for i, th := range threads {
		tids[i] = th.TID
	}
	sess, err := profiler.Open(profiler.Options{Target: profiler.Target{TIDs: tids}, Backend: o.Backend})
	if err != nil {
		return s, err
	}
	defer func() { err = errors.Join(err, sess.Close()) }()
	// The owner split is an extra: a kernel that refuses it loses the
	// split (reported under backends.unavailable), not the run.
	trk, ownerErr := softirqowner.Attach(sess)
	if ownerErr == nil {
		defer func() { err = errors.Join(err, trk.Close()) }()
	}
	at, err := openAttribution(sess, o)
	if err != nil {
		return s, err
	}
	defer func() { err = errors.Join(err, at.Close()) }()
	roleOf := map[uint32]workload.Role{}
	for i, th := range threads {
		tag := softirqowner.OwnerFirst + uint32(i)
		if trk != nil {
			if err := trk.Register(th.Cookie, tag); err != nil {
				return s, err
			}
		}
		roleOf[tag] = th.Role
	}
	read := func() (softirqowner.Counts, error) {
		if trk == nil {
			return softirqowner.Counts{}, nil
		}
		return trk.Read()
	}

	own0, err := read()
	if err != nil {
		return s, err
	}
	if err := at.begin(); err != nil {
		return s, err
	}
	start, err := sess.Snapshot()
	if err != nil {
		return s, err
	}
	res, runErr := tr.Run(ctx)
	end, err := sess.Snapshot()
	if runErr != nil {
		return s, runErr
	}
	if err != nil {
		return s, err
	}
	own1, err := read()
	if err != nil {
		return s, err
	}
	if err := at.end(); err != nil {
		return s, err
	}
	iv := profiler.Delta(start, end)
	var owners softirqowner.Counts
	var dropped uint64
	if trk != nil {
		owners, dropped = own1.Sub(own0), trk.Dropped()
	}
	s, err = build(cfg, o, threads, res, iv, owners, roleOf, sess, dropped)
	if err == nil {
		at.annotate(&s, threads, iv)
		if at == nil && o.Attribution != nil && o.Attribution.Backend == attrib.BackendNone {
			s.doc.Backends.Unavailable["attribution"] = "turned off (--backend none)"
		}
	}
	if err == nil && ownerErr != nil {
		s.doc.Backends.Unavailable["softirq_owner"] = oneLine(ownerErr)
	}
	return s, err
}

func build(cfg workload.Config, o Options, threads []workload.Thread, res workload.Result, iv profiler.Interval,
	owners softirqowner.Counts, roleOf map[uint32]workload.Role, sess *profiler.Session, dropped uint64) (sample, error) {
	byTID := map[int]workload.Thread{}
	for _, th := range threads {
		byTID[th.TID] = th
	}
	sides := map[workload.Role][]profiler.ThreadDelta{}
	for _, td := range iv.Threads {
		if th, ok := byTID[td.Info.TID]; ok {
			sides[th.Role] = append(sides[th.Role], td)
		}
	}
	for _, r := range []workload.Role{workload.RoleSender, workload.RoleReceiver} {
		tds := sides[r]
		if len(tds) == 0 {
			return sample{}, fmt.Errorf("%s %s: no %s thread was accounted", cfg.Method, cfg.RxMethod, r)
		}
		sort.Slice(tds, func(i, j int) bool { return byTID[tds[i].Info.TID].Stream < byTID[tds[j].Info.TID].Stream })
	}
	pid := os.Getpid()
	tot := res.Total()
	c := report.Cell{
		Method: cfg.Method, RxMethod: cfg.RxMethod, Size: cfg.Size, Streams: cfg.Streams,
		Topology: cfg.Topology, Repeats: 1, ThroughputBps: res.ThroughputBps(),
		Sender:   profiler.ProcessEntry(pid, sides[workload.RoleSender], o.Threads),
		Receiver: profiler.ProcessEntry(pid, sides[workload.RoleReceiver], o.Threads),
		Workload: &report.Workload{
			ElapsedNS: uint64(res.Elapsed), SentBytes: uint64(tot.SentBytes), ReceivedBytes: uint64(tot.ReceivedBytes),
			SendCalls: uint64(tot.SendCalls), RecvCalls: uint64(tot.RecvCalls),
			ZCCompletions: uint64(tot.ZCCompletions), ZCCopied: uint64(tot.ZCCopied), ZCNotifications: uint64(tot.ZCNotifications),
			RxMappedBytes: uint64(tot.RxMappedBytes), RxCopiedBytes: uint64(tot.RxCopiedBytes), PayloadErrors: uint64(tot.PayloadErrors),
			Congestion: tot.Congestion,
		},
	}
	if owners != nil {
		c.Sender.SoftirqOwner = ownerSplit(workload.RoleSender, sides[workload.RoleSender], owners, roleOf)
		c.Receiver.SoftirqOwner = ownerSplit(workload.RoleReceiver, sides[workload.RoleReceiver], owners, roleOf)
	}
	applyFacts(&c)
	doc := sess.NewDocument("run", iv, c.Sender.CPU.OnCPUNS+c.Receiver.CPU.OnCPUNS)
	if dropped > 0 {
		doc.Warnings = append(doc.Warnings, "the softirq owner map was full: some segments were not counted")
	}
	if tot.PayloadErrors > 0 {
		doc.Warnings = append(doc.Warnings, fmt.Sprintf("%s: the receiver found %d chunks that did not match the sent pattern", cellName(c), tot.PayloadErrors))
	}
	return sample{cell: c, doc: doc}, nil
}

// serviceDemand is on-CPU ns per MiB moved.
func serviceDemand(ns, bytes uint64) float64 {
	if bytes == 0 {
		return 0
	}
	return float64(ns) / (float64(bytes) / mib)
}
