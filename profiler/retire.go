package profiler

import (
	"maps"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/byteclass"
)

// Exited threads are released from the BPF maps, so that a long run with
// churn never fills them (a full stats map drops counts; a full
// thread_infos leaves a thread nameless): a thread whose exit one snapshot
// saw is retired by the next (one interval later, so that counts waiting
// in a CPU's spill slots have been flushed), its final figures folded
// into one row per process, kept in Go. The row is a generation of its
// own (retiredGenBase and up, far above what BPF hands out), with the
// process id as its tid, so Delta takes it like a thread and needs to know
// only where a vanished generation went (Snapshot.Retired).
//
// Snapshots share the rows: a row a snapshot holds is never changed, and
// retire() grows a copy instead. A row that did not change between two
// snapshots is the same pointer in both, and Delta skips it. Copying every
// row's figures into every snapshot had made half of a churn soak's
// allocations (423 MB of 867 MB over 90 s, 18,000 processes).
const retiredGenBase = 0xC0000000

// retiredRow is the exited threads of one process, summed; immutable once
// a snapshot holds it.
type retiredRow struct {
	info     ThreadInfo
	counters map[PathCtx]Counter
	bytes    map[byteclass.PathClass]byteclass.Count
	clock    Clock // runtime since each thread's baseline (retireBaseline)
}

// grown is a copy of row that retire() may add to.
func (row *retiredRow) grown() *retiredRow {
	return &retiredRow{info: row.info, counters: maps.Clone(row.counters), bytes: maps.Clone(row.bytes), clock: row.clock}
}

type retirement struct {
	originNS uint64              // the session's first snapshot
	pending  map[uint32]bool     // generations seen exited by the last snapshot
	rows     map[int]*retiredRow // by tgid
	nextGen  uint32
}

// retireBaseline is the clock a retired thread's runtime counts from: 0
// when it was born after the session's first snapshot, else BPF's first
// sighting (threads registered from user space, StartNS 0, are never
// retired: they are few and their baseline is a snapshot's).
func retireBaseline(originNS uint64, info ThreadInfo) Clock {
	base, _, _ := baseline(&Snapshot{MonoNS: originNS}, info, info.Gen)
	return base
}

// addRetired hands snap the retired rows as they are now.
func (r *retirement) addRetired(snap *Snapshot) {
	if r.originNS == 0 {
		r.originNS = snap.MonoNS
	}
	snap.OriginNS = r.originNS
	snap.Retired = make(map[int]uint32, len(r.rows))
	snap.retiredRows = make(map[uint32]*retiredRow, len(r.rows))
	for tgid, row := range r.rows {
		snap.Retired[tgid] = row.info.Gen
		snap.retiredRows[row.info.Gen] = row
	}
}

// retire folds the generations the previous snapshot saw exited (and snap
// read again, final) into their process's row and deletes their map
// entries. snap itself is left as read: the rows grow from the next
// snapshot on.
func (s *Session) retire(snap *Snapshot) {
	r := &s.retired
	if r.rows == nil {
		r.rows = map[int]*retiredRow{}
		r.nextGen = retiredGenBase
	}
	done := map[uint32]*retiredRow{}
	next := map[uint32]bool{}
	grown := map[int]bool{} // rows copied by this call, free to change
	for gen, th := range snap.Threads {
		if !th.Exited || gen >= retiredGenBase || th.StartNS == 0 {
			continue
		}
		if !r.pending[gen] {
			next[gen] = true
			continue
		}
		row := r.rows[th.TGID]
		if row == nil {
			row = &retiredRow{
				info:     ThreadInfo{Gen: r.nextGen, TID: th.TGID, TGID: th.TGID, Comm: th.Comm, StartNS: snap.MonoNS, Exited: true},
				counters: map[PathCtx]Counter{},
				bytes:    map[byteclass.PathClass]byteclass.Count{},
			}
			r.nextGen++
			r.rows[th.TGID] = row
			grown[th.TGID] = true
		} else if !grown[th.TGID] {
			row = row.grown() // the last snapshot holds row as it was
			r.rows[th.TGID] = row
			grown[th.TGID] = true
		}
		if th.TID == th.TGID || row.info.Comm == "" {
			row.info.Comm = th.Comm
		}
		base := retireBaseline(r.originNS, th)
		c := snap.Clocks[gen]
		row.clock.RuntimeNS += c.RuntimeNS - base.RuntimeNS
		row.clock.UtimeNS += sat(c.UtimeNS, base.UtimeNS)
		row.clock.StimeNS += sat(c.StimeNS, base.StimeNS)
		done[gen] = row
		_ = s.core.Maps["thread_infos"].Delete(gen)
	}
	r.pending = next
	if len(done) == 0 {
		return
	}
	stats := s.core.Maps["stats"]
	for k, c := range snap.Counters {
		row := done[k.Gen]
		if row == nil {
			continue
		}
		pc := PathCtx{k.Path, k.Ctx}
		row.counters[pc] = row.counters[pc].add(c)
		_ = stats.Delete(bpf.AccountingZcStatKey{Gen: k.Gen, Path: uint8(k.Path), Ctx: uint8(k.Ctx)})
	}
	for k, c := range snap.ByteClasses {
		row := done[k.Gen]
		if row == nil {
			continue
		}
		pc := byteclass.PathClass{Path: k.Path, Class: k.Class}
		row.bytes[pc] = row.bytes[pc].Add(c)
		s.bytes.Forget(k)
	}
}

// retiredTo is the generation a key of gen counts under in cur: its
// process's retired row when cur no longer has the thread.
func retiredTo(prev, cur *Snapshot, gen uint32) (uint32, bool) {
	if gen == 0 {
		return gen, false
	}
	if _, ok := cur.info(gen); ok {
		return gen, false
	}
	info, ok := prev.Threads[gen]
	if !ok {
		return gen, false
	}
	row, ok := cur.Retired[info.TGID]
	return row, ok
}

// retiredSincePrev is, per retired row of cur, what its threads retired
// since prev had run by prev (from each one's retireBaseline): the row's
// clock grew by their whole runtime, of which the interval has only the
// rest.
func retiredSincePrev(prev, cur *Snapshot) map[uint32]Clock {
	adj := map[uint32]Clock{}
	for gen, info := range prev.Threads {
		to, ok := retiredTo(prev, cur, gen)
		if !ok {
			continue
		}
		c, ok := prev.Clocks[gen]
		if !ok {
			continue
		}
		base := retireBaseline(cur.OriginNS, info)
		a := adj[to]
		a.RuntimeNS += c.RuntimeNS - base.RuntimeNS
		a.UtimeNS += sat(c.UtimeNS, base.UtimeNS)
		a.StimeNS += sat(c.StimeNS, base.StimeNS)
		adj[to] = a
	}
	return adj
}
