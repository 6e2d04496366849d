package profiler

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/cilium/ebpf"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/procfs"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// A live thread's task-context counters (time, calls and bytes by path,
// its user time included) are not in the stats map: its threads entry
// holds them up to its last switch-out, and while it runs, its CPU holds
// what it added since (zc_cpu.pend, written back to the entry when it is
// switched out: flush_thread in bpf/accounting.bpf.c). Once the entry is
// gone (the thread exited) they are in stats.
//
// A snapshot reads stats, then the CPUs, then the entries, and adds a
// CPU's pend only when the entry, read after it, has not taken it in yet
// (its seq is still the one the CPU loaded, pend_seq). So a run's counts
// are in a snapshot once: on the CPU or in the entry, never in both; and
// a later snapshot never has fewer: a run flushed after the CPUs were read
// is in the entry read after that. A thread that exited after stats were
// read has its counts in stats, which are read again for it
// (refreshExited).

// readEntries reads every live thread's entry whole, by generation.
func (s *Session) readEntries(snap *Snapshot) error {
	var (
		tid uint32
		th  bpf.AccountingZcThread
	)
	m := s.core.Maps["threads"]
	snap.live = map[uint32]bpf.AccountingZcThread{}
	it := m.Iterate()
	for it.Next(&tid, &th) {
		whole, ok, err := lookupWhole(m, tid, th)
		if err != nil {
			return err
		}
		if !ok || whole.Gen == 0 { // gone, or being made (create_thread)
			continue
		}
		// A thread that exits during the walk deletes its entry, and the
		// kernel then restarts the walk from the first key, so an entry
		// can come twice: the later copy has the larger seq.
		if prev, seen := snap.live[whole.Gen]; !seen || whole.Seq >= prev.Seq {
			snap.live[whole.Gen] = whole
		}
	}
	if err := it.Err(); err != nil && !errors.Is(err, ebpf.ErrIterationAborted) {
		return fmt.Errorf("read threads: %w", err)
	}
	return nil
}

// lookupWhole reads tid's entry again until two copies in a row are the
// same and no flush was under way (seq even): a copy made during a flush
// could hold some paths' counts before it and some after. first is the
// copy in hand. ok is false when the entry is gone.
func lookupWhole(m *ebpf.Map, tid uint32, first bpf.AccountingZcThread) (bpf.AccountingZcThread, bool, error) {
	prev := first
	for i := 0; i < 1000; i++ {
		var th bpf.AccountingZcThread
		if err := m.Lookup(tid, &th); err != nil {
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				return th, false, nil
			}
			return th, false, fmt.Errorf("read threads: %w", err)
		}
		if th == prev && th.Seq%2 == 0 {
			return th, true, nil
		}
		prev = th
	}
	return prev, false, fmt.Errorf("read threads: thread %d's entry changed under every read", tid)
}

// taskSpan is what a CPU holds for its running target beyond its pend:
// the open span in task context, which the next event charges to the pend,
// and the handler time gathered since it was switched in. Its entry takes
// both in at switch-out (seq: the entry's seq they belong with).
type taskSpan struct {
	key Key
	seq uint64
	c   Counter
	tid uint32
	// stopped: the thread was not running when its state was read after
	// the CPUs (markStopped), though its CPU still showed it current.
	stopped bool
}

// addPend adds what each CPU held for its running target (zc_cpu.pend)
// and the open task-context span that will go there, where the entry read
// after the CPUs has not taken them in yet: a thread switched out in
// between has them in its entry.
func (snap *Snapshot) addPend(cpus []bpf.AccountingZcCpu) {
	for i := range cpus {
		c := &cpus[i]
		if c.Resolved == 0 || c.Gen == 0 {
			continue
		}
		if e, ok := snap.live[c.Gen]; ok && e.Seq == c.PendSeq {
			snap.addPathCounts(c.Gen, &c.Pend)
		}
	}
	for _, sp := range snap.taskSpans {
		e, ok := snap.live[sp.key.Gen]
		if !ok || e.Seq != sp.seq {
			continue
		}
		k := sp.key
		if sp.stopped && k.Ctx == taxonomy.CtxTask {
			// Its switch-out was not reported (its entry would have
			// moved on): the span is not its own for certain. The
			// CPU's next event finds another task running and
			// charges the window as switch-uncertain (missed_switch).
			k.Ctx = taxonomy.CtxSwitchUncertain
		}
		snap.Counters[k] = snap.Counters[k].add(sp.c)
	}
}

// markStopped notes the open task-context spans whose thread was not
// running when read (running: /proc's state), between the CPUs' read and
// the entries'. On kernels that skip some sched_switch events (seen on PVM
// guests, docs/known-issues.md), a CPU that went idle after an unreported
// switch-out still shows the thread current until its next event, which
// on an idle CPU may be far off: counted as the thread's, that idle time
// was milliseconds of on-CPU time schedstat never billed.
func (snap *Snapshot) markStopped(running func(tid uint32) bool) {
	for i := range snap.taskSpans {
		sp := &snap.taskSpans[i]
		if sp.key.Ctx == taxonomy.CtxTask && !running(sp.tid) {
			sp.stopped = true
		}
	}
}

// threadRunning: /proc says the thread is running or runnable ('R'). A
// thread that is gone is not; a read that fails otherwise changes nothing.
func threadRunning(tid uint32) bool {
	st, err := procfs.ReadTaskStat(int(tid), int(tid))
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	return err != nil || st.State == 'R'
}

// addEntries adds the live entries' counters.
func (snap *Snapshot) addEntries() {
	for gen, e := range snap.live {
		snap.addPathCounts(gen, &e.Task)
		snap.addThreadCount(Key{gen, taxonomy.ProbePath, taxonomy.CtxProbe}, e.Probe)
		snap.addThreadCount(Key{gen, taxonomy.ProbePath, taxonomy.CtxKernelDiff}, e.Kdiff)
	}
}

func (snap *Snapshot) addThreadCount(k Key, v bpf.AccountingZcStatVal) {
	if v.Calls == 0 && v.Ns == 0 {
		return
	}
	snap.Counters[k] = snap.Counters[k].add(Counter{Calls: v.Calls, NS: v.Ns})
}

// addPathCounts adds a thread's (path, CTX_TASK) counts (modulo 2^64: a
// count moved away from PATH_UNKNOWN is a negative add on the CPU).
func (snap *Snapshot) addPathCounts(gen uint32, pc *bpf.AccountingZcPathCounts) {
	for p, v := range pc.P {
		if v.Calls == 0 && v.Ns == 0 && v.Bytes == 0 {
			continue // no counter where there was none
		}
		k := Key{gen, taxonomy.Path(p), taxonomy.CtxTask}
		snap.Counters[k] = snap.Counters[k].add(Counter{v.Calls, v.Ns, v.Bytes})
	}
}

// entryKeys are the counters a threads entry holds for gen.
func entryKeys(gen uint32) []Key {
	keys := []Key{{gen, taxonomy.ProbePath, taxonomy.CtxProbe}, {gen, taxonomy.ProbePath, taxonomy.CtxKernelDiff}}
	for p := range len(bpf.AccountingZcPathCounts{}.P) {
		keys = append(keys, Key{gen, taxonomy.Path(p), taxonomy.CtxTask})
	}
	return keys
}

// refreshExited reads again from stats the counters an entry holds
// (entryKeys) of the exited threads whose entry was not read: the thread
// may have exited (and its counts moved there, retire_counts) after stats
// were read.
func (s *Session) refreshExited(snap *Snapshot) error {
	stats := s.core.Maps["stats"]
	for gen, th := range snap.Threads {
		if !th.Exited {
			continue
		}
		if _, live := snap.live[gen]; live {
			continue
		}
		for _, k := range entryKeys(gen) {
			var perCPU []bpf.AccountingZcStatVal
			err := stats.Lookup(bpf.AccountingZcStatKey{Gen: gen, Path: uint8(k.Path), Ctx: uint8(k.Ctx)}, &perCPU)
			if errors.Is(err, ebpf.ErrKeyNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("read stats: %w", err)
			}
			var c Counter
			for _, v := range perCPU {
				c = c.add(Counter{v.Calls, v.Ns, v.Bytes})
			}
			snap.Counters[k] = c.add(snap.spilled[k])
		}
	}
	return nil
}
