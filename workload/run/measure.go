package run

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"time"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/workload"
)

// sample is one run of one cell: the cell's figures and the sessions'
// document parts (overhead, precision, warnings, backends).
type sample struct {
	cell report.Cell
	doc  *report.Document
}

// Peer is the other host of a two-host run (workload/remote's client).
type Peer interface {
	// NewSide returns the peer's side for one run of a cell, playing
	// role, with the same backends and options as the local side (the
	// peer decides its own addresses and ports).
	NewSide(role workload.Role, o SideOptions) (Side, error)
	// Addrs are the data addresses: this host's (where the peer reached
	// it) and the peer's.
	Addrs() (local, peer netip.Addr)
}

// sides are the sides of one run of a cell: one local side playing both
// roles, or with a peer, a local side and the peer's.
func (o Options) sides() ([]Side, error) {
	so := SideOptions{Backend: o.Backend, ByteClasses: o.ByteClasses, Attribution: o.Attribution, Threads: o.Threads}
	if o.Peer == nil {
		return []Side{NewLocalSide(so, workload.RoleSender, workload.RoleReceiver)}, nil
	}
	local, remote := workload.RoleSender, workload.RoleReceiver
	if o.Reverse {
		local, remote = remote, local
	}
	peer, err := o.Peer.NewSide(remote, so)
	so.Local, so.Peer = o.Peer.Addrs()
	so.DataPorts = o.DataPorts
	if err != nil {
		return nil, err
	}
	return []Side{NewLocalSide(so, local), peer}, nil
}

// measure runs one cell once on its sides and builds the cell. Everything
// the sides create (threads, sockets, netns, temp file, programs, on
// either host) is released before it returns, on every path.
func measure(ctx context.Context, cfg workload.Config, o Options) (s sample, err error) {
	sides, err := o.sides()
	if err != nil {
		return s, err
	}
	defer func() {
		for _, sd := range sides {
			err = errors.Join(err, sd.Close())
		}
	}()
	// Receivers listen first; the sender connects to their ports.
	sort.SliceStable(sides, func(i, j int) bool { return receivesOnly(sides[i]) && !receivesOnly(sides[j]) })
	var ports []int
	for _, sd := range sides {
		p, err := sd.Prepare(ctx, cfg, ports)
		if err != nil {
			return s, err
		}
		if p != nil {
			ports = p
		}
	}
	for _, sd := range sides {
		if err := sd.Start(ctx); err != nil {
			return s, err
		}
	}
	if err := runSides(ctx, sides); err != nil {
		return s, err
	}
	rs := make([]SideResult, len(sides))
	for i, sd := range sides {
		if rs[i], err = sd.Finish(ctx); err != nil {
			return s, err
		}
	}
	return combine(cfg, rs), nil
}

func receivesOnly(sd Side) bool {
	r := sd.Roles()
	return len(r) == 1 && r[0] == workload.RoleReceiver
}

// runSides releases the sides in order, each once the one before has let
// its threads go (a receiver before its sender, so that the receiver's
// clock, which throughput is counted by, sees the first byte), and waits
// for all. The first side to fail stops the others. The error returned is
// the peer's where it has one (it says why: lost, silent, refused), then
// the first side's.
func runSides(ctx context.Context, sides []Side) error {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(sides))
	done := make(chan int, len(sides))
	for i, sd := range sides {
		released := make(chan struct{})
		go func() {
			errs[i] = sd.Run(rctx, func() { close(released) })
			if errs[i] != nil {
				cancel()
			}
			done <- i
		}()
		select {
		case <-released:
		case j := <-done:
			done <- j // counted below
		}
	}
	for range sides {
		<-done
	}
	var first error
	for i := len(errs) - 1; i >= 0; i-- {
		err := errs[i]
		if err == nil || (ctx.Err() == nil && errors.Is(err, context.Canceled)) {
			continue
		}
		if _, local := sides[i].(*LocalSide); !local {
			return err
		}
		if first == nil {
			first = err
		}
	}
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}

// combine builds the cell from the sides' parts: each role's entry from
// the side that played it, the workload counts of both, and throughput by
// the receiver's clock (counted where the bytes land).
func combine(cfg workload.Config, rs []SideResult) sample {
	var res workload.Result
	var sender, receiver *report.Process
	for _, r := range rs {
		res.Streams = append(res.Streams, r.Counts)
		if r.Sender != nil {
			sender = r.Sender
		}
		if r.Receiver != nil {
			receiver = r.Receiver
			res.Elapsed = time.Duration(r.ElapsedNS)
		}
	}
	tot := res.Total()
	c := report.Cell{
		Method: cfg.Method, RxMethod: cfg.RxMethod, Size: cfg.Size, Streams: cfg.Streams,
		Topology: cfg.Topology, Repeats: 1, ThroughputBps: res.ThroughputBps(),
		Sender: *sender, Receiver: *receiver,
		Workload: &report.Workload{
			ElapsedNS: uint64(res.Elapsed), SentBytes: uint64(tot.SentBytes), ReceivedBytes: uint64(tot.ReceivedBytes),
			SendCalls: uint64(tot.SendCalls), RecvCalls: uint64(tot.RecvCalls),
			ZCCompletions: uint64(tot.ZCCompletions), ZCCopied: uint64(tot.ZCCopied), ZCNotifications: uint64(tot.ZCNotifications),
			RxMappedBytes: uint64(tot.RxMappedBytes), RxCopiedBytes: uint64(tot.RxCopiedBytes), PayloadErrors: uint64(tot.PayloadErrors),
			Congestion: tot.Congestion, MSS: tot.MSS, TxDevice: tot.TxDevice, TxDeviceNoSG: tot.TxNoSG,
		},
	}
	doc := rs[0].Doc
	if len(rs) > 1 {
		for _, r := range rs {
			h := sideHost(r.Doc)
			if r.Sender != nil {
				c.Sender.Host = h
			}
			if r.Receiver != nil {
				c.Receiver.Host = h
			}
		}
		doc = mergeDocs(rs, c)
	}
	applyFacts(&c)
	for _, r := range rs {
		doc.Stacks = append(doc.Stacks, r.Stacks...)
	}
	if tot.PayloadErrors > 0 {
		doc.Warnings = append(doc.Warnings, fmt.Sprintf("%s: the receiver found %d chunks that did not match the sent pattern", cellName(c), tot.PayloadErrors))
	}
	return sample{cell: c, doc: doc}
}

// sideHost is what a side's entry says of its host in a two-host run.
func sideHost(d *report.Document) *report.SideHost {
	p := d.Precision
	if p != nil {
		q := *p
		p = &q
	}
	return &report.SideHost{Host: d.Host, Backends: d.Backends, Overhead: d.Overhead, Precision: p}
}

// mergeDocs makes one document of a two-host run's sides: the first
// (local) side's host and backends, overhead and precision summed over
// both hosts, and the peer's warnings named by its host.
func mergeDocs(rs []SideResult, c report.Cell) *report.Document {
	d := *rs[0].Doc
	d.Warnings = append([]string(nil), d.Warnings...)
	var p report.Precision
	if d.Precision != nil {
		p = *d.Precision
	}
	d.Precision = &p
	d.Backends.Unavailable = map[string]string{}
	for k, v := range rs[0].Doc.Backends.Unavailable {
		d.Backends.Unavailable[k] = v
	}
	for _, r := range rs[1:] {
		d.Overhead.Misses += r.Doc.Overhead.Misses
		if q := r.Doc.Precision; q != nil {
			p.Checked += q.Checked
			p.Failed += q.Failed
			p.Unchecked += q.Unchecked
			p.MaxErrPct = max(p.MaxErrPct, q.MaxErrPct)
		}
		for _, w := range r.Doc.Warnings {
			d.Warnings = append(d.Warnings, "peer "+r.Doc.Host.Hostname+": "+w)
		}
	}
	// One scope for both hosts: their handlers' time over what their
	// threads ran.
	report.ScopeOverhead(&d.Overhead, c.Sender.CPU, c.Receiver.CPU)
	return &d
}

// threadsByRole groups the interval's threads of a transfer by role, each
// in stream order.
func threadsByRole(threads []workload.Thread, iv profiler.Interval) map[workload.Role][]profiler.ThreadDelta {
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
	for _, tds := range sides {
		sort.Slice(tds, func(i, j int) bool { return byTID[tds[i].Info.TID].Stream < byTID[tds[j].Info.TID].Stream })
	}
	return sides
}

func pidOf() int { return os.Getpid() }

// serviceDemand is on-CPU ns per MiB moved.
func serviceDemand(ns, bytes uint64) float64 {
	return report.PerMiB(ns, bytes)
}
