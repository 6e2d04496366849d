package profiler

import (
	"maps"
	"slices"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/byteclass"
)

// Exited threads are released from the BPF maps, so that a long run with
// churn never fills them (a full stats map drops counts; a full
// thread_infos leaves a thread nameless): a thread whose exit one snapshot
// saw is retired by the next (one interval later, so that counts waiting
// in a CPU's spill slots have been flushed), its final figures folded
// into a row kept in Go. The row is a generation of its own
// (retiredGenBase and up, far above what BPF hands out), and every
// retired thread's row is in Snapshot.retiredGens, so Delta takes a row
// like a thread and needs to know only where a vanished generation went.
//
// A row is one exited process (its pid and its leader's start: a pid is
// reused once all its threads are gone), while there are fewer than
// maxRows of them, when the thread used heavyNS or more, or when its
// process lives on (a server whose threads come and go). Past that the
// exited threads are summed by name (a fold row, ThreadInfo.Processes), so
// that memory stays bounded however long the run and however many
// processes come and go: an hour of 100 spawns a second is 360,000 of them.
//
// Snapshots share the rows: a row a snapshot holds is never changed, and
// retire() grows a copy instead. A row that did not change between two
// snapshots is the same pointer in both, and Delta skips it. Copying every
// row's figures into every snapshot had made half of a churn soak's
// allocations (423 MB of 867 MB over 90 s, 18,000 processes).
const retiredGenBase = 0xC0000000

const (
	// maxRetiredRows: exited processes kept one per row before light
	// ones are summed by name.
	maxRetiredRows = 4096
	// heavyRetiredNS: a thread that ran this long keeps its process a
	// row of its own past maxRetiredRows.
	heavyRetiredNS = 100_000_000
)

// retiredRow is the exited threads of one process (or of one name, a fold
// row), summed; immutable once a snapshot holds it.
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

// procKey is a process: its pid and its leader's start.
type procKey struct {
	tgid  int
	start uint64
}

func procOf(th ThreadInfo) procKey { return procKey{th.TGID, th.ProcStartNS} }

// isFoldRow: the row of exited processes summed by name (rowFor makes
// them with no pid, under a retired generation).
func (th ThreadInfo) isFoldRow() bool { return th.TGID == 0 && th.Gen >= retiredGenBase }

type retirement struct {
	originNS uint64                  // the session's first snapshot
	pending  map[uint32]bool         // generations seen exited by the last snapshot
	rows     map[procKey]*retiredRow // exited processes
	folds    map[string]*retiredRow  // exited threads past maxRows, by name
	gens     genIndex                // every retired generation's row
	maxRows  int                     // maxRetiredRows; tests set fewer
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
	snap.retiredGens = r.gens
	snap.retiredRows = make(map[uint32]*retiredRow, len(r.rows)+len(r.folds))
	for _, row := range r.rows {
		snap.retiredRows[row.info.Gen] = row
	}
	for _, row := range r.folds {
		snap.retiredRows[row.info.Gen] = row
	}
}

// retired is what one retire call took out of the maps.
type retired struct {
	infos    []uint32 // thread_infos entries
	counters []Key
	bytes    []byteclass.Key
}

// retire takes the generations the previous snapshot saw exited (and snap
// read again, final) into their rows and deletes their map entries. snap
// itself is left as read: the rows grow from the next snapshot on.
func (s *Session) retire(snap *Snapshot) {
	gone := s.retired.take(snap)
	for _, gen := range gone.infos {
		_ = s.core.Maps["thread_infos"].Delete(gen)
	}
	stats := s.core.Maps["stats"]
	for _, k := range gone.counters {
		_ = stats.Delete(bpf.AccountingZcStatKey{Gen: k.Gen, Path: uint8(k.Path), Ctx: uint8(k.Ctx)})
	}
	for _, k := range gone.bytes {
		s.classes.Forget(k)
	}
}

// take moves into rows what the threads to retire hold in snap, and says
// which map entries to delete.
func (r *retirement) take(snap *Snapshot) retired {
	if r.rows == nil {
		r.rows = map[procKey]*retiredRow{}
		r.folds = map[string]*retiredRow{}
		r.nextGen = retiredGenBase
		if r.maxRows == 0 {
			r.maxRows = maxRetiredRows
		}
	}
	var out retired
	done := map[uint32]*retiredRow{}
	next := map[uint32]bool{}
	grown := map[*retiredRow]bool{} // rows made or copied by this call, free to change
	var pairs []genRow
	alive := map[procKey]bool{} // processes with a thread still running
	for _, th := range snap.Threads {
		if !th.Exited {
			alive[procOf(th)] = true
		}
	}
	// In generation order, so that which processes keep rows of their own
	// does not depend on map order.
	for _, gen := range slices.Sorted(maps.Keys(snap.Threads)) {
		th := snap.Threads[gen]
		if !th.Exited || gen >= retiredGenBase || th.StartNS == 0 {
			continue
		}
		if !r.pending[gen] {
			next[gen] = true
			continue
		}
		base := retireBaseline(r.originNS, th)
		c := snap.Clocks[gen]
		row, fresh := r.rowFor(th, c.RuntimeNS-base.RuntimeNS >= heavyRetiredNS || alive[procOf(th)], snap.MonoNS)
		if !fresh && !grown[row] {
			row = row.grown() // the last snapshot holds row as it was
			r.replace(row)
		}
		grown[row] = true
		fold := row.info.isFoldRow()
		switch {
		case fold && th.TID == th.TGID:
			row.info.Processes++
		case !fold && (th.TID == th.TGID || row.info.Comm == ""):
			row.info.Comm = th.Comm
		}
		row.clock.RuntimeNS += c.RuntimeNS - base.RuntimeNS
		row.clock.UtimeNS += sat(c.UtimeNS, base.UtimeNS)
		row.clock.StimeNS += sat(c.StimeNS, base.StimeNS)
		done[gen] = row
		pairs = append(pairs, genRow{gen, row.info.Gen})
		out.infos = append(out.infos, gen)
	}
	r.pending = next
	r.gens = r.gens.with(pairs)
	if len(done) == 0 {
		return out
	}
	for k, c := range snap.Counters {
		row := done[k.Gen]
		if row == nil {
			continue
		}
		pc := PathCtx{k.Path, k.Ctx}
		row.counters[pc] = row.counters[pc].add(c)
		out.counters = append(out.counters, k)
	}
	for k, c := range snap.ByteClasses {
		row := done[k.Gen]
		if row == nil {
			continue
		}
		pc := byteclass.PathClass{Path: k.Path, Class: k.Class}
		row.bytes[pc] = row.bytes[pc].Add(c)
		out.bytes = append(out.bytes, k)
	}
	return out
}

// rowFor is the row an exiting thread's figures go to, made (fresh) if
// needed: its process's, else (past maxRows, a light thread of a process
// that has no row and no thread left) its name's fold row. own: the
// thread ran heavyRetiredNS or more, or its process lives on, so a
// row of its own even past maxRows.
func (r *retirement) rowFor(th ThreadInfo, own bool, nowNS uint64) (row *retiredRow, fresh bool) {
	p := procOf(th)
	if row := r.rows[p]; row != nil {
		return row, false
	}
	if len(r.rows) < r.maxRows || own {
		row := r.newRow(ThreadInfo{TID: th.TGID, TGID: th.TGID, ProcStartNS: th.ProcStartNS, Comm: th.Comm, StartNS: nowNS, Exited: true})
		r.rows[p] = row
		return row, true
	}
	if row := r.folds[th.Comm]; row != nil {
		return row, false
	}
	row = r.newRow(ThreadInfo{Comm: th.Comm, StartNS: nowNS, Exited: true}) // take counts its Processes
	r.folds[th.Comm] = row
	return row, true
}

func (r *retirement) newRow(info ThreadInfo) *retiredRow {
	info.Gen = r.nextGen
	r.nextGen++
	return &retiredRow{info: info, counters: map[PathCtx]Counter{}, bytes: map[byteclass.PathClass]byteclass.Count{}}
}

// replace puts a grown copy where its row was (rows or folds).
func (r *retirement) replace(g *retiredRow) {
	if g.info.isFoldRow() {
		r.folds[g.info.Comm] = g
		return
	}
	r.rows[procOf(g.info)] = g
}

// retiredTo is the generation a key of gen counts under in cur: its
// row when cur no longer has the thread.
func retiredTo(prev, cur *Snapshot, gen uint32) (uint32, bool) {
	if gen == 0 {
		return gen, false
	}
	if _, ok := cur.info(gen); ok {
		return gen, false
	}
	if _, ok := prev.Threads[gen]; !ok {
		return gen, false
	}
	return cur.retiredGens.row(gen)
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
