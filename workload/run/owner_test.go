package run

import (
	"testing"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/softirqowner"
	"github.com/zcprof/zcprof/profiler/taxonomy"
	"github.com/zcprof/zcprof/workload"
)

func TestOwnerSplit(t *testing.T) {
	const sndTag, rcvTag = softirqowner.OwnerFirst, softirqowner.OwnerFirst + 1
	roles := map[uint32]workload.Role{sndTag: workload.RoleSender, rcvTag: workload.RoleReceiver}
	netrx := func(gen uint32, ns uint64) profiler.ThreadDelta {
		return profiler.ThreadDelta{Info: profiler.ThreadInfo{Gen: gen}, Counters: map[profiler.PathCtx]profiler.Counter{
			{Path: taxonomy.PathTxWrite, Ctx: taxonomy.CtxSoftirqNetRx}: {NS: ns * 3 / 4},
			{Path: taxonomy.PathWait, Ctx: taxonomy.CtxSoftirqNetRx}:    {NS: ns / 4},
			{Path: taxonomy.PathTxWrite, Ctx: taxonomy.CtxTask}:         {NS: 999},
		}}
	}
	counts := softirqowner.Counts{
		// Thread 1: timed 10 for its own socket (ACKs), 30 for the peer's,
		// 10 unknown; 5 in task context (ignored).
		{Gen: 1, Owner: sndTag, Ctx: softirqowner.CtxNetRx}:                    {Segs: 4, NS: 10},
		{Gen: 1, Owner: rcvTag, Ctx: softirqowner.CtxNetRx}:                    {Segs: 2, Bytes: 100, NS: 30},
		{Gen: 1, Owner: softirqowner.OwnerUnknown, Ctx: softirqowner.CtxNetRx}: {NS: 10},
		{Gen: 1, Owner: rcvTag, Ctx: softirqowner.CtxTask}:                     {Segs: 9, Bytes: 900},
		// Thread 2: a negative (moved-out) unknown counts as nothing.
		{Gen: 2, Owner: rcvTag, Ctx: softirqowner.CtxNetRx}:                    {Segs: 1, Bytes: 50, NS: 20},
		{Gen: 2, Owner: softirqowner.OwnerUnknown, Ctx: softirqowner.CtxNetRx}: {NS: ^uint64(4)},
		// Thread 3: bytes taken back for dropped segments (modular): 20
		// from the peer's total, and 64 from its own, which had none.
		{Gen: 3, Owner: rcvTag, Ctx: softirqowner.CtxNetRx}: {Bytes: ^uint64(19)},
		{Gen: 3, Owner: sndTag, Ctx: softirqowner.CtxNetRx}: {Bytes: ^uint64(63)},
		// Another side's thread: not ours.
		{Gen: 7, Owner: sndTag, Ctx: softirqowner.CtxNetRx}: {Segs: 100, NS: 1000},
	}
	// Thread 3 has NET_RX time but nothing timed: all unattributed.
	so := ownerSplit(workload.RoleSender, []profiler.ThreadDelta{netrx(1, 1000), netrx(2, 400), netrx(3, 80)}, counts, roles)
	// own = 1000*10/50 = 200; peer = 1000*30/50 + 400 = 1000; rest 280.
	if so.NetRxNS != 1480 || so.ForOwnNS != 200 || so.ForPeerNS != 1000 || so.UnattributedNS != 280 {
		t.Errorf("split %+v", so)
	}
	if so.OwnSegments != 4 || so.PeerSegments != 3 || so.PeerBytes != 130 || so.OwnBytes != 0 || !so.Estimate {
		t.Errorf("segments %+v", so)
	}
}
