package profiler

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// What a CPU has not charged yet goes to its running target: the open span
// and the handler time not flushed. An estimated handler run that left
// last_ts ahead of the clock opens no span, and its probe time counts less
// the overshoot the next event gives back (catch_up in bpf/common.h); it
// used to be dropped with the span.
func TestInFlightAheadOfTheClock(t *testing.T) {
	const gen = 7
	running := func(last uint64) bpf.AccountingZcCpu {
		return bpf.AccountingZcCpu{LastTs: last, Tid: 42, Gen: gen, Resolved: 1,
			Path: uint8(taxonomy.PathTxWrite), ProbeNs: 300, ProbeRuns: 2}
	}
	noThread := func(uint32) (bpf.AccountingZcThread, bool) { return bpf.AccountingZcThread{}, false }
	probe := Key{gen, taxonomy.ProbePath, taxonomy.CtxProbe}
	write := Key{gen, taxonomy.PathTxWrite, taxonomy.CtxTask}
	for _, tc := range []struct {
		name          string
		last          uint64
		span, probeNS uint64
		probeRuns     uint64
	}{
		{"behind", 10_000 - 500, 500, 300, 2},
		{"even", 10_000, 0, 300, 2},
		{"ahead", 10_000 + 120, 0, 180, 2},
		{"ahead by more than its probe time", 10_000 + 400, 0, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Snapshot{MonoNS: 10_000, Counters: map[Key]Counter{}}
			c := running(tc.last)
			s.addCPUInFlight(&c, noThread)
			s.live = map[uint32]bpf.AccountingZcThread{gen: {Gen: gen}}
			s.addPend(nil)
			if got := s.Counters[write].NS; got != tc.span {
				t.Errorf("open span %d ns, want %d", got, tc.span)
			}
			if got := s.Counters[probe]; got.NS != tc.probeNS || got.Calls != tc.probeRuns {
				t.Errorf("probe %d ns in %d runs, want %d in %d", got.NS, got.Calls, tc.probeNS, tc.probeRuns)
			}
		})
	}
}

// A thread switched in since the CPU's last event is looked up; one that
// is not a target adds nothing.
func TestInFlightLooksUpASwitchedInThread(t *testing.T) {
	c := bpf.AccountingZcCpu{LastTs: 9_000, Tid: 42, ProbeNs: 50, ProbeRuns: 1}
	s := &Snapshot{MonoNS: 10_000, Counters: map[Key]Counter{}}
	s.addCPUInFlight(&c, func(uint32) (bpf.AccountingZcThread, bool) { return bpf.AccountingZcThread{}, false })
	if len(s.Counters) != 0 {
		t.Fatalf("a non-target's CPU added %v", s.Counters)
	}
	s.addCPUInFlight(&c, func(tid uint32) (bpf.AccountingZcThread, bool) {
		return bpf.AccountingZcThread{Gen: 9, Path: uint8(taxonomy.PathRxRead), Seq: 4}, tid == 42
	})
	s.live = map[uint32]bpf.AccountingZcThread{9: {Gen: 9, Seq: 4}}
	s.addPend(nil)
	if got := s.Counters[Key{9, taxonomy.PathRxRead, taxonomy.CtxTask}].NS; got != 1_000 {
		t.Fatalf("switched-in thread's span %d ns, want 1000", got)
	}
	if got := s.Counters[Key{9, taxonomy.ProbePath, taxonomy.CtxProbe}]; got.NS != 50 || got.Calls != 1 {
		t.Fatalf("switched-in thread's probe %+v", got)
	}
}

// userSpanSnapshot is a snapshot of a CPU that runs thread 42 (gen 7) in
// user space, with 500 ns in its pend and a 1,000 ns span open, taken with
// the thread running or not by /proc (running), and its entry read after
// the CPUs with entrySeq and entryNS of user time. The CPU's pend_seq is 6:
// another entrySeq means the thread was switched out in between.
func userSpanSnapshot(t *testing.T, entrySeq, entryNS uint64, running bool) *Snapshot {
	t.Helper()
	const gen = 7
	c := bpf.AccountingZcCpu{LastTs: 9_000, Tid: 42, Gen: gen, Resolved: 1, Path: uint8(taxonomy.PathUser), PendSeq: 6}
	c.Pend.P[taxonomy.PathUser] = bpf.AccountingZcStatVal{Ns: 500}
	s := &Snapshot{MonoNS: 10_000, Counters: map[Key]Counter{}}
	s.addCPUInFlight(&c, func(uint32) (bpf.AccountingZcThread, bool) { return bpf.AccountingZcThread{}, false })
	var asked []uint32
	s.markStopped(func(tid uint32) bool { asked = append(asked, tid); return running })
	if len(asked) != 1 || asked[0] != 42 {
		t.Fatalf("asked about threads %v, want [42]", asked)
	}
	e := bpf.AccountingZcThread{Gen: gen, Seq: entrySeq}
	e.Task.P[taxonomy.PathUser] = bpf.AccountingZcStatVal{Ns: entryNS}
	s.live = map[uint32]bpf.AccountingZcThread{gen: e}
	s.addPend([]bpf.AccountingZcCpu{c})
	s.addEntries()
	return s
}

var (
	spanUser      = Key{7, taxonomy.PathUser, taxonomy.CtxTask}
	spanUncertain = Key{7, taxonomy.PathUser, taxonomy.CtxSwitchUncertain}
)

// A task-context span open when the CPUs were read is charged to the
// CPU's pend at the next event; if the thread was switched out before its
// entry was read, the entry has it (and the pend): counted there, once.
func TestInFlightSpanOnceWithTheEntry(t *testing.T) {
	for _, tc := range []struct {
		name     string
		entrySeq uint64
		entryNS  uint64
		want     uint64
	}{
		{"still running", 6, 2_000, 2_000 + 500 + 1_000},
		{"switched out since", 8, 2_000 + 500 + 1_000 + 300, 2_000 + 500 + 1_000 + 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := userSpanSnapshot(t, tc.entrySeq, tc.entryNS, true)
			if got := s.Counters[spanUser].NS; got != tc.want {
				t.Errorf("user %d ns, want %d", got, tc.want)
			}
		})
	}
}

// A CPU that still shows a target current after an unreported switch-out
// (its entry unchanged, the thread not running when read) holds a span
// that is not the target's for certain: switch-uncertain, not its user
// time. Its pend was counted before the switch and stays its own.
func TestInFlightSpanOfAStoppedThreadIsUncertain(t *testing.T) {
	for _, tc := range []struct {
		name                string
		running             bool
		wantUser, wantUncer uint64
	}{
		{"running", true, 2_000 + 500 + 1_000, 0},
		{"not running", false, 2_000 + 500, 1_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := userSpanSnapshot(t, 6, 2_000, tc.running)
			if got := s.Counters[spanUser].NS; got != tc.wantUser {
				t.Errorf("user %d ns, want %d", got, tc.wantUser)
			}
			if got := s.Counters[spanUncertain].NS; got != tc.wantUncer {
				t.Errorf("switch-uncertain %d ns, want %d", got, tc.wantUncer)
			}
		})
	}
}

// threadRunning reads /proc: this test's own thread runs, a thread that
// is gone does not.
func TestThreadRunning(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if !threadRunning(uint32(unix.Gettid())) {
		t.Error("the calling thread is not running by /proc")
	}
	if threadRunning(1 << 30) {
		t.Error("a tid that does not exist is running by /proc")
	}
}
