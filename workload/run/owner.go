package run

import (
	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/softirqowner"
	"github.com/zcprof/zcprof/profiler/taxonomy"
	"github.com/zcprof/zcprof/workload"
)

const ownerMethod = "each skb's NET_RX processing is timed from its entry into the stack (net:netif_receive_skb) " +
	"to the next skb or the softirq's exit, and owned by the socket tcp_probe names (backlogged skbs: when their " +
	"owner processes them); the exact NET_RX time of each thread is split in proportion to those times"

// ownerSplit splits the exact NET_RX time of one side's threads by whose
// sockets the work was for: the side's own (role), the other side's, or
// unattributed (segments with no owner, other sockets, and when nothing
// was timed). Thread by thread, so that each thread's exact figure is
// divided by its own timings.
func ownerSplit(role workload.Role, threads []profiler.ThreadDelta, counts softirqowner.Counts, roleOf map[uint32]workload.Role) *report.SoftirqOwner {
	so := &report.SoftirqOwner{Estimate: true, Method: ownerMethod}
	// Bytes taken back for a dropped out-of-order segment land where the
	// drop ran, not always where the segment was counted: sum signed and
	// clamp, so a key that is only a take-back cannot wrap the total.
	var ownBytes, peerBytes int64
	type timed struct{ own, peer, total float64 }
	byGen := map[uint32]*timed{}
	for _, th := range threads {
		byGen[th.Info.Gen] = &timed{}
	}
	for k, v := range counts {
		tm := byGen[k.Gen]
		if tm == nil || k.Ctx != softirqowner.CtxNetRx {
			continue
		}
		// Time moved between keys is modular; a negative delta (moved
		// out of "unattributed" for an skb timed before the interval)
		// counts as nothing.
		ns := float64(max(int64(v.NS), 0))
		tm.total += ns
		r, ok := roleOf[k.Owner]
		switch {
		case ok && r == role:
			tm.own += ns
			so.OwnSegments += v.Segs
			ownBytes += int64(v.Bytes)
		case ok:
			tm.peer += ns
			so.PeerSegments += v.Segs
			peerBytes += int64(v.Bytes)
		}
	}
	so.OwnBytes, so.PeerBytes = uint64(max(ownBytes, 0)), uint64(max(peerBytes, 0))
	for _, th := range threads {
		var netrx uint64
		for k, c := range th.Counters {
			if k.Ctx == taxonomy.CtxSoftirqNetRx {
				netrx += c.NS
			}
		}
		so.NetRxNS += netrx
		tm := byGen[th.Info.Gen]
		if tm.total <= 0 {
			so.UnattributedNS += netrx
			continue
		}
		own := uint64(float64(netrx) * tm.own / tm.total)
		peer := uint64(float64(netrx) * tm.peer / tm.total)
		so.ForOwnNS += own
		so.ForPeerNS += peer
		so.UnattributedNS += netrx - own - peer
	}
	return so
}
