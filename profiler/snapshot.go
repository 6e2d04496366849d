package profiler

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/procfs"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// Key addresses one accounting counter.
type Key struct {
	Gen  uint32 // thread generation; 0 is the system row
	Path taxonomy.Path
	Ctx  taxonomy.Ctx
}

// Counter is what BPF accumulated for a key.
type Counter struct {
	Calls, NS, Bytes uint64
}

func (c Counter) add(o Counter) Counter {
	return Counter{c.Calls + o.Calls, c.NS + o.NS, c.Bytes + o.Bytes}
}

// sub is modular: counters are u64 and may wrap; the difference of two
// readings is still right.
func (c Counter) sub(o Counter) Counter {
	return Counter{c.Calls - o.Calls, c.NS - o.NS, c.Bytes - o.Bytes}
}

// ThreadInfo identifies a generation.
type ThreadInfo struct {
	Gen       uint32
	TID, TGID int
	Comm      string
	StartNS   uint64 // CLOCK_MONOTONIC; 0 for threads registered from user space
	// ProcStartNS is its process leader's StartNS: with TGID, the process
	// (a pid is reused once all its threads are gone). 0 where unknown.
	ProcStartNS uint64
	// Processes is, for a fold row (retire.go: exited threads summed by
	// name, TGID 0), how many processes' leaders it holds; else 0.
	Processes      int
	FirstRuntimeNS uint64 // sum_exec_runtime when BPF first saw it
	Exited         bool
	ExitRuntimeNS  uint64
	ExitUtimeNS    uint64
	ExitStimeNS    uint64
}

// Clock is the kernel's own view of a thread at snapshot time.
type Clock struct {
	RuntimeNS        uint64 // sum_exec_runtime (schedstat)
	UtimeNS, StimeNS uint64 // what times() reports
}

// Snapshot is one consistent-enough reading of everything: the counters,
// the in-flight time on each CPU, and the kernel's clocks of each thread.
type Snapshot struct {
	MonoNS    uint64
	Counters  map[Key]Counter
	Threads   map[uint32]ThreadInfo
	Clocks    map[uint32]Clock // by generation; live threads from /proc, exited ones from BPF
	BPFMisses uint64           // handler runs skipped by the kernel's recursion guard
	Dropped   uint64
	// ThreadsFull and ThreadInfosFull count threads the kernel found no
	// room for in threads and thread_infos (their time is on the SYSTEM row).
	ThreadsFull, ThreadInfosFull uint64
	// MissedSwitches counts context switches sched_switch did not report
	// (a task found current with no event); their boundaries are estimated.
	MissedSwitches uint64
	// ClampedRuns counts runs whose measured-minus-kernel difference was
	// too large to keep (see taxonomy.CtxKernelDiff); StealNS is the host's steal
	// time so far, all CPUs (/proc/stat), for the self-check's bound.
	ClampedRuns uint64
	StealNS     uint64
	// ByteClasses are the byte-class counters. Classified: the
	// byte-class programs were loaded; without them the accounting counts
	// only what a request shows (byteclass.ClassRxDiscard).
	ByteClasses    map[byteclass.Key]byteclass.Count
	ByteClassDrops uint64
	Classified     bool
	// OriginNS is the session's first snapshot.
	OriginNS uint64
	// retiredRows are the rows exited threads are summed under
	// (retire.go), by generation, shared with other snapshots;
	// retiredGens says which row each retired thread went to. Threads,
	// Clocks, Counters and ByteClasses hold only what was read from BPF
	// and /proc.
	retiredRows map[uint32]*retiredRow
	retiredGens genIndex
	// live: by generation, the threads entries read whole (entries.go);
	// spilled: the counts readCounters found in the spill slots.
	live    map[uint32]bpf.AccountingZcThread
	spilled map[Key]Counter
	// taskSpans: the CPUs' open spans in task context, for addPend;
	// spanEnd: where open spans end (the clock before the CPUs' read).
	taskSpans []taskSpan
	spanEnd   uint64
}

// info is a generation's identity, a retired row's included.
func (s *Snapshot) info(gen uint32) (ThreadInfo, bool) {
	if row, ok := s.retiredRows[gen]; ok {
		return row.info, true
	}
	th, ok := s.Threads[gen]
	return th, ok
}

// clock is a generation's kernel clocks, a retired row's included.
func (s *Snapshot) clock(gen uint32) (Clock, bool) {
	if row, ok := s.retiredRows[gen]; ok {
		return row.clock, true
	}
	c, ok := s.Clocks[gen]
	return c, ok
}

func monoNow() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// Snapshot reads the counters. Time a CPU spent since its last event is
// added to whoever runs there now, so a busy thread that makes no syscalls
// is still counted up to this instant.
func (s *Session) Snapshot() (*Snapshot, error) {
	snap := &Snapshot{
		Counters: map[Key]Counter{},
		Threads:  map[uint32]ThreadInfo{},
		Clocks:   map[uint32]Clock{},
	}
	if err := s.readCounters(snap); err != nil {
		return nil, err
	}
	cpus, err := s.addInFlight(snap)
	if err != nil {
		return nil, err
	}
	snap.markStopped(threadRunning)
	if err := s.readEntries(snap); err != nil {
		return nil, err
	}
	snap.addPend(cpus)
	snap.addEntries()
	if err := s.readThreads(snap); err != nil {
		return nil, err
	}
	if err := s.refreshExited(snap); err != nil {
		return nil, err
	}
	s.readClocks(snap)
	if snap.ByteClasses, snap.ByteClassDrops, err = s.classes.Read(); err != nil {
		return nil, err
	}
	if s.bytes != nil {
		snap.Classified = true
		for _, pc := range s.bytes.Inferred() {
			byteclass.InferCopies(snap.ByteClasses, pc, snap.pathTotals(pc.Path))
		}
	}
	s.readMisses(snap)
	snap.StealNS = procfs.HostStealNS()
	for name, dst := range map[string]*uint64{"dropped": &snap.Dropped, "missed_switches": &snap.MissedSwitches, "clamped_runs": &snap.ClampedRuns,
		"threads_full": &snap.ThreadsFull, "thread_infos_full": &snap.ThreadInfosFull} {
		if err := s.core.Variables[name].Get(dst); err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
	}
	s.mu.Lock()
	s.retired.addRetired(snap)
	s.retire(snap)
	s.mu.Unlock()
	return snap, nil
}

// pathTotals are the bytes and calls of one path in snap's counters, by
// generation (every context).
func (snap *Snapshot) pathTotals(path taxonomy.Path) map[uint32]byteclass.Count {
	out := map[uint32]byteclass.Count{}
	for k, c := range snap.Counters {
		if k.Path == path {
			out[k.Gen] = out[k.Gen].Add(byteclass.Count{Bytes: c.Bytes, Events: c.Calls})
		}
	}
	return out
}

func (s *Session) readCounters(snap *Snapshot) error {
	var (
		k      bpf.AccountingZcStatKey
		perCPU []bpf.AccountingZcStatVal
	)
	it := s.core.Maps["stats"].Iterate()
	for it.Next(&k, &perCPU) {
		var c Counter
		for _, v := range perCPU {
			c = c.add(Counter{v.Calls, v.Ns, v.Bytes})
		}
		snap.Counters[Key{k.Gen, taxonomy.Path(k.Path), taxonomy.Ctx(k.Ctx)}] = c
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read stats: %w", err)
	}
	// Counts waiting in the spill slots (see struct zc_spill).
	var spills []bpf.AccountingZcSpill
	if err := s.core.Maps["spill"].Lookup(uint32(0), &spills); err != nil {
		return fmt.Errorf("read spill: %w", err)
	}
	snap.spilled = map[Key]Counter{}
	for _, sp := range spills {
		for i := 0; i < int(sp.N) && i < len(sp.Key); i++ {
			k := Key{sp.Key[i].Gen, taxonomy.Path(sp.Key[i].Path), taxonomy.Ctx(sp.Key[i].Ctx)}
			v := sp.Val[i]
			snap.Counters[k] = snap.Counters[k].add(Counter{v.Calls, v.Ns, v.Bytes})
			snap.spilled[k] = snap.spilled[k].add(Counter{v.Calls, v.Ns, v.Bytes})
		}
	}
	return nil
}

// addInFlight adds what each CPU has not charged yet to its running
// target: the open span and the probe time (addCPUInFlight). It returns
// the CPUs as read, for their pending counts (addPend, entries.go).
func (s *Session) addInFlight(snap *Snapshot) ([]bpf.AccountingZcCpu, error) {
	var cpus []bpf.AccountingZcCpu
	// Open spans end where the clock was read before the CPUs: read
	// after, it could be far past the copy (this thread preempted in
	// between) and count time the next event gives to someone else.
	snap.spanEnd = monoNow()
	if err := s.core.Maps["cpu_states"].Lookup(uint32(0), &cpus); err != nil {
		return nil, fmt.Errorf("read cpu states: %w", err)
	}
	snap.MonoNS = monoNow()
	lookup := func(tid uint32) (bpf.AccountingZcThread, bool) {
		var th bpf.AccountingZcThread
		return th, s.core.Maps["threads"].Lookup(tid, &th) == nil
	}
	for i := range cpus {
		snap.addCPUInFlight(&cpus[i], lookup)
	}
	return cpus, nil
}

// addCPUInFlight adds what one CPU has not charged yet to its running
// target (lookup finds a thread switched in since its last event): the open
// span since last_ts, and the handler time gathered for it since the last
// flush. An estimated handler run can leave last_ts ahead of the clock (the
// next event gives the overshoot back, catch_up in bpf/common.h): then no
// span is open, and the probe time is taken as catch_up would leave it.
func (snap *Snapshot) addCPUInFlight(c *bpf.AccountingZcCpu, lookup func(tid uint32) (bpf.AccountingZcThread, bool)) {
	if c.LastTs == 0 || c.Tid == 0 {
		return
	}
	gen, path, seq := c.Gen, taxonomy.Path(c.Path), c.PendSeq
	if c.Resolved == 0 || gen == 0 {
		th, ok := lookup(c.Tid)
		if !ok {
			return // not a target
		}
		gen, path, seq = th.Gen, taxonomy.Path(th.Path), th.Seq
	}
	probe := c.ProbeNs
	end := snap.spanEnd
	if end == 0 {
		end = snap.MonoNS
	}
	if c.LastTs < end {
		ctx := taxonomy.CtxTask
		if c.Depth > 0 {
			ctx = taxonomy.Ctx(c.Stack[c.Depth&3])
		}
		span := Counter{NS: end - c.LastTs}
		if ctx == taxonomy.CtxTask {
			// Charged to the CPU's pend when it ends: counted with
			// the pend, if the entry read later has not taken it in.
			snap.taskSpans = append(snap.taskSpans, taskSpan{key: Key{gen, path, ctx}, seq: seq, c: span, tid: c.Tid})
		} else {
			k := Key{gen, path, ctx}
			snap.Counters[k] = snap.Counters[k].add(span)
		}
	} else if c.LastTs <= snap.MonoNS {
		// An event came after the clock was read: no span open then.
	} else if over := c.LastTs - snap.MonoNS; over < probe {
		probe -= over
	} else {
		probe = 0
	}
	if probe != 0 || c.ProbeRuns != 0 {
		// The thread's entry takes it in at switch-out, as the pend.
		k := Key{gen, taxonomy.ProbePath, taxonomy.CtxProbe}
		snap.taskSpans = append(snap.taskSpans, taskSpan{key: k, seq: seq, c: Counter{Calls: c.ProbeRuns, NS: probe}, tid: c.Tid})
	}
}

func (s *Session) readThreads(snap *Snapshot) error {
	var (
		gen  uint32
		info bpf.AccountingZcThreadInfo
	)
	it := s.core.Maps["thread_infos"].Iterate()
	for it.Next(&gen, &info) {
		snap.Threads[gen] = ThreadInfo{
			Gen: gen, TID: int(info.Tid), TGID: int(info.Tgid), Comm: cString(info.Comm[:]),
			StartNS: info.StartNs, ProcStartNS: info.LeaderStartNs, FirstRuntimeNS: info.FirstRuntimeNs,
			Exited: info.Exited != 0, ExitRuntimeNS: info.ExitRuntimeNs,
			ExitUtimeNS: info.ExitUtimeNs, ExitStimeNS: info.ExitStimeNs,
		}
	}
	if err := it.Err(); err != nil && !errors.Is(err, ebpf.ErrIterationAborted) {
		return fmt.Errorf("read thread infos: %w", err)
	}
	return nil
}

// readClocks reads schedstat and stat of every known thread. A thread that
// exited since is read from what BPF stored at its last switch.
func (s *Session) readClocks(snap *Snapshot) {
	for gen, th := range snap.Threads {
		if th.Exited {
			snap.Clocks[gen] = Clock{RuntimeNS: th.ExitRuntimeNS, UtimeNS: th.ExitUtimeNS, StimeNS: th.ExitStimeNS}
			continue
		}
		rt, err := procfs.ThreadRuntime(th.TGID, th.TID)
		if err != nil {
			continue // exiting right now; the next snapshot has its exit figures
		}
		c := Clock{RuntimeNS: rt}
		if st, err := procfs.ReadTaskStat(th.TGID, th.TID); err == nil {
			c.UtimeNS, c.StimeNS = st.UtimeNS, st.StimeNS
		}
		snap.Clocks[gen] = c
	}
}

// readMisses sums the handler runs the kernel skipped (its recursion
// guard counts them whether or not run-time statistics are on).
func (s *Session) readMisses(snap *Snapshot) {
	for _, p := range s.progs.progs {
		if st, err := p.Stats(); err == nil {
			snap.BPFMisses += st.RecursionMisses
		}
	}
}

func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// ProgramStats reports run time and count per attached program, for
// benchmarks that turn the kernel's run-time statistics on themselves
// (ebpf.EnableStats: they tax every program on the host, so a session
// never leaves them on; zcprof times its own handlers, taxonomy.CtxProbe).
func (s *Session) ProgramStats() map[string][2]uint64 {
	out := map[string][2]uint64{}
	for _, p := range s.progs.progs {
		st, err := p.Stats()
		if err != nil {
			continue
		}
		info, _ := p.Info()
		name := ""
		if info != nil {
			name = info.Name
		}
		out[name] = [2]uint64{uint64(st.Runtime), st.RunCount}
	}
	return out
}
