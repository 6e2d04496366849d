package profiler

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// A retired row is shared by the snapshots that hold it: Delta counts a
// row that grew by its growth, a thread retired into it by what it did
// since prev, and a row that did not change not at all.
func TestDeltaOfSharedRetiredRows(t *testing.T) {
	const ms = uint64(1e6)
	const row = retiredGenBase
	write := PathCtx{taxonomy.PathTxWrite, taxonomy.CtxTask}
	live := ThreadInfo{Gen: 5, TID: 101, TGID: 100, Comm: "w", StartNS: 500 * ms, FirstRuntimeNS: 1 * ms}
	r1 := &retiredRow{info: ThreadInfo{Gen: row, TID: 100, TGID: 100, Comm: "w", StartNS: 900 * ms, Exited: true},
		counters: map[PathCtx]Counter{write: {Calls: 10, NS: 40 * ms, Bytes: 1000}}, clock: Clock{RuntimeNS: 40 * ms}}
	// Thread 5 ran 20 ms by A (5 of them writing) and 50 ms in all when
	// it exited, 12 ms writing; B holds the row it was folded into.
	a := &Snapshot{MonoNS: 1000 * ms, OriginNS: 100 * ms,
		Counters:    map[Key]Counter{{5, write.Path, write.Ctx}: {Calls: 1, NS: 5 * ms, Bytes: 10}},
		Threads:     map[uint32]ThreadInfo{5: live},
		Clocks:      map[uint32]Clock{5: {RuntimeNS: 20 * ms}},
		retiredRows: map[uint32]*retiredRow{row: r1}}
	r2 := r1.grown()
	r2.counters[write] = r2.counters[write].add(Counter{Calls: 3, NS: 12 * ms, Bytes: 30})
	r2.clock.RuntimeNS += 50 * ms // since its baseline: born after the origin
	gens := genIndex{}.with([]genRow{{5, row}})
	b := &Snapshot{MonoNS: 2000 * ms, OriginNS: 100 * ms, Counters: map[Key]Counter{}, Threads: map[uint32]ThreadInfo{}, Clocks: map[uint32]Clock{},
		retiredGens: gens, retiredRows: map[uint32]*retiredRow{row: r2}}
	c := &Snapshot{MonoNS: 3000 * ms, OriginNS: 100 * ms, Counters: map[Key]Counter{}, Threads: map[uint32]ThreadInfo{}, Clocks: map[uint32]Clock{},
		retiredGens: gens, retiredRows: map[uint32]*retiredRow{row: r2}}

	if got := r1.counters[write]; got.NS != 40*ms {
		t.Fatalf("growing a copy changed the shared row: %+v", got)
	}
	ab := Delta(a, b)
	if len(ab.Threads) != 1 {
		t.Fatalf("A to B: %d threads, want the retired row alone: %+v", len(ab.Threads), ab.Threads)
	}
	th := ab.Threads[0]
	if th.Info.Gen != row || th.Info.TGID != 100 {
		t.Fatalf("A to B: counted under %+v, want the row", th.Info)
	}
	if got := th.Counters[write]; got != (Counter{Calls: 2, NS: 7 * ms, Bytes: 20}) {
		t.Errorf("A to B: tx.write %+v, want what thread 5 did after A", got)
	}
	if !th.RuntimeKnown || th.Runtime != 30*ms {
		t.Errorf("A to B: runtime %d (known %v), want thread 5's 30 ms after A", th.Runtime, th.RuntimeKnown)
	}
	if bc := Delta(b, c); len(bc.Threads) != 0 {
		t.Errorf("B to C: an unchanged row counted: %+v", bc.Threads)
	}
	ac := Delta(a, c)
	if len(ac.Threads) != 1 || ac.Threads[0].Counters[write] != th.Counters[write] || ac.Threads[0].Runtime != th.Runtime {
		t.Errorf("A to C %+v, want A to B's %+v", ac.Threads, th)
	}
	// From nothing, the row is all it holds.
	if all := Delta(nil, c); len(all.Threads) != 1 || all.Threads[0].Counters[write] != r2.counters[write] || all.Threads[0].Runtime != 90*ms {
		t.Errorf("from the start: %+v, want the row's %+v and 90 ms", all.Threads, r2.counters[write])
	}
}

// exitingWritersEnv makes this test binary a child that, for each line on
// stdin, writes exitingWrites chunks of 64 KiB over loopback from a new
// thread that then exits, and prints "pid tid calls bytes" of that thread.
const exitingWritersEnv = "ZCPROF_TEST_EXITING_WRITERS"

const exitingWrites = 10

func init() { childMode(exitingWritersEnv, "exiting writers", runExitingWriters) }

func runExitingWriters(string) error {
	tx, rx, err := loopbackPair(unix.SOCK_STREAM)
	if err != nil {
		return err
	}
	go func() {
		buf := make([]byte, 256<<10)
		for {
			if n, err := unix.Read(rx, buf); n <= 0 && err != unix.EINTR {
				return
			}
		}
	}()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		type wrote struct {
			tid          int
			calls, bytes uint64
			err          error
		}
		done := make(chan wrote)
		go func() {
			// Locked and never unlocked: the thread exits with the goroutine.
			runtime.LockOSThread()
			w := wrote{tid: unix.Gettid()}
			buf := make([]byte, 64<<10)
			for i := 0; i < exitingWrites; i++ {
				n, err := unix.Write(tx, buf)
				w.calls++
				if err != nil && err != unix.EINTR {
					w.err = err
					break
				}
				w.bytes += uint64(max(n, 0))
			}
			done <- w
		}()
		w := <-done
		if w.err != nil {
			return w.err
		}
		fmt.Printf("%d %d %d %d\n", os.Getpid(), w.tid, w.calls, w.bytes)
	}
	return in.Err()
}

// A process whose threads exit one at a time grows its retired row from
// one snapshot to the next. Every snapshot keeps the row it was handed:
// an interval ending after a thread's retirement has exactly that
// thread's writes, and an earlier snapshot's row never moves.
func TestRetiredRowGrowsByCopy(t *testing.T) {
	requireBPF(t)
	sess, err := Open(Options{Target: Target{FollowChildren: true}, ByteClasses: byteclass.Off})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	// The child is forked after the shell is a target, so that its threads
	// are born under BPF (threads registered from user space are never
	// retired).
	cmd := exec.Command("sh", "-c", `read go; "$0" -test.run=^$`, os.Args[0])
	cmd.Env = append(os.Environ(), exitingWritersEnv+"=1")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	if err := sess.AddProcess(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(stdin, "go")
	out := bufio.NewScanner(stdout)
	snap := func() *Snapshot { return mustSnapshot(t, sess) }
	var child int
	// One writer thread exits; snapshots see it exited, then fold it (two
	// when its dead switch was seen before the first; later when the
	// thread was still on its way out after leaving /proc, or the PVM did
	// not report its last switch); the next is handed the row it went
	// into.
	writer := func() (calls, bytes uint64) {
		t.Helper()
		fmt.Fprintln(stdin, "write")
		if !out.Scan() {
			t.Fatalf("child: %v", out.Err())
		}
		var tid int
		if _, err := fmt.Sscan(out.Text(), &child, &tid, &calls, &bytes); err != nil {
			t.Fatalf("child said %q: %v", out.Text(), err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d", child, tid)); os.IsNotExist(err) {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("writer thread %d of %d has not exited after 10 s", tid, child)
			}
		}
		// Retired: a snapshot no longer reads its thread.
		for deadline := time.Now().Add(10 * time.Second); ; {
			found := false
			for gen, th := range snap().Threads {
				found = found || (th.TID == tid && gen < retiredGenBase)
			}
			if !found {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("writer thread %d of %d not retired after 10 s", tid, child)
			}
			time.Sleep(time.Millisecond)
		}
		return calls, bytes
	}
	var rowGen uint32
	writeOf := func(a, b *Snapshot) Counter {
		var sum Counter
		for _, th := range Delta(a, b).Threads {
			if th.Info.Gen == rowGen {
				sum = th.Counters[PathCtx{taxonomy.PathTxWrite, taxonomy.CtxTask}]
			}
		}
		return sum
	}
	writer()
	first := snap()
	for gen, row := range first.retiredRows {
		if row.info.TGID == child {
			rowGen = gen
		}
	}
	if rowGen == 0 {
		t.Fatalf("no retired row for process %d after its first writer exited", child)
	}
	was := *first.retiredRows[rowGen].grown()
	prev := first
	for i := 0; i < 3; i++ {
		calls, bytes := writer()
		cur := snap()
		if got := writeOf(prev, cur); got.Calls != calls || got.Bytes != bytes {
			t.Errorf("writer %d: its process's row grew by %d tx.write calls and %d bytes, want its %d and %d", i+2, got.Calls, got.Bytes, calls, bytes)
		}
		if cur.retiredRows[rowGen] == prev.retiredRows[rowGen] {
			t.Errorf("writer %d: the row grew in place", i+2)
		}
		prev = cur
	}
	if now := first.retiredRows[rowGen]; !maps.Equal(now.counters, was.counters) || now.clock != was.clock {
		t.Errorf("the first snapshot's row changed after it: %+v, was %+v", now.counters, was.counters)
	}
	if got := writeOf(first, prev); got.Calls != 3*exitingWrites {
		t.Errorf("first to last snapshot: %d tx.write calls in the row, want %d", got.Calls, 3*exitingWrites)
	}
}

// Exited processes keep rows of their own by pid and leader start (a pid
// reused is another process); past the cap a light one is summed into its
// name's fold row and a heavy one still gets a row; and every thread is
// counted once, in the interval it ran in.
func TestRetireByProcessAndFold(t *testing.T) {
	const ms = uint64(1e6)
	write := PathCtx{taxonomy.PathTxWrite, taxonomy.CtxTask}
	type thread struct {
		gen        uint32
		tgid       int
		start      uint64
		comm       string
		ran, calls uint64
	}
	threads := []thread{
		{1, 100, 1100 * ms, "a", 10 * ms, 1},
		{2, 100, 1600 * ms, "b", 20 * ms, 2}, // pid 100 again: another process
		{3, 200, 1200 * ms, "c", 5 * ms, 3},
		{4, 300, 1300 * ms, "c", 6 * ms, 4},
		{5, 400, 1400 * ms, "c", heavyRetiredNS, 5},
		{6, 500, 1500 * ms, "c", 7 * ms, 6}, // its process lives on (gen 7)
		{8, 600, 1600 * ms, "d", 5 * ms, 7},
		{9, 700, 1700 * ms, "d", 6 * ms, 8}, // as much as c's fold row: names order them
	}
	server := ThreadInfo{Gen: 7, TID: 500, TGID: 500, Comm: "c", StartNS: 1500 * ms, ProcStartNS: 1500 * ms}
	exited := func(mono uint64) *Snapshot {
		s := &Snapshot{MonoNS: mono, Counters: map[Key]Counter{}, Threads: map[uint32]ThreadInfo{}, Clocks: map[uint32]Clock{}}
		s.Threads[server.Gen] = server
		for _, th := range threads {
			tid := th.tgid
			if th.gen == 6 {
				tid = 501 // not the leader: that is the live gen 7
			}
			s.Threads[th.gen] = ThreadInfo{Gen: th.gen, TID: tid, TGID: th.tgid, Comm: th.comm, StartNS: th.start, ProcStartNS: th.start, Exited: true}
			s.Counters[Key{th.gen, write.Path, write.Ctx}] = Counter{Calls: th.calls, NS: th.ran}
			s.Clocks[th.gen] = Clock{RuntimeNS: th.ran}
		}
		return s
	}
	empty := func(mono uint64) *Snapshot {
		return &Snapshot{MonoNS: mono, Counters: map[Key]Counter{}, Threads: map[uint32]ThreadInfo{server.Gen: server}, Clocks: map[uint32]Clock{}}
	}
	r := retirement{maxRows: 2}
	var snaps []*Snapshot
	for i, s := range []*Snapshot{empty(1000 * ms), exited(2000 * ms), exited(3000 * ms), empty(4000 * ms)} {
		r.addRetired(s) // as Session.Snapshot does
		gone := r.take(s)
		if i == 2 && len(gone.infos) != len(threads) {
			t.Fatalf("retired %d threads when seen exited twice, want %d", len(gone.infos), len(threads))
		}
		snaps = append(snaps, s)
	}
	type entry struct {
		pid, exited int
		comm        string
		ns          uint64
	}
	entries := func(a, b *Snapshot) map[entry]bool {
		out := map[entry]bool{}
		for _, p := range Processes(Delta(a, b), false) {
			if p.CPU.OnCPUNS != 0 || p.CPU.SchedstatNS != 0 { // a row whose threads' counts it took in shows, at 0
				out[entry{p.PID, p.ExitedProcesses, p.Comm, p.CPU.OnCPUNS}] = true
			}
		}
		return out
	}
	want := map[entry]bool{
		{100, 0, "a", 10 * ms}:        true,
		{100, 0, "b", 20 * ms}:        true,
		{400, 0, "c", heavyRetiredNS}: true, // heavy: a row past the cap
		{500, 0, "c", 7 * ms}:         true, // its process lives on: its row, past the cap
		{0, 2, "c", 11 * ms}:          true, // 200 and 300, summed by name
		{0, 2, "d", 11 * ms}:          true,
	}
	if got := entries(snaps[0], snaps[3]); !maps.Equal(got, want) {
		t.Errorf("whole run: %v, want %v", got, want)
	}
	for range 10 { // map order must not show
		var folds []string
		for _, p := range Processes(Delta(snaps[0], snaps[3]), false) {
			if p.ExitedProcesses > 0 {
				folds = append(folds, p.Comm)
			}
		}
		if !slices.Equal(folds, []string{"c", "d"}) {
			t.Fatalf("fold rows of equal CPU in order %v, want [c d]", folds)
		}
	}
	// Between the snapshot that read the threads last and the one with
	// their rows nothing happened; before it, all of it.
	if got := entries(snaps[2], snaps[3]); len(got) != 0 {
		t.Errorf("after the threads' last reading: %v, want nothing", got)
	}
	if got := entries(snaps[0], snaps[2]); len(got) != len(threads) {
		t.Errorf("up to their last reading: %v, want the %d threads", got, len(threads))
	}
}

// The index of retired generations: what a snapshot was handed stays as
// it was while retire adds to the session's, merges included.
func TestGenIndex(t *testing.T) {
	var idx genIndex
	held := []genIndex{}
	for call := uint32(0); call < 3*mergeEvery; call++ {
		idx = idx.with([]genRow{{gen: 2*call + 1, row: retiredGenBase + call}, {gen: 2 * call, row: retiredGenBase + call}})
		held = append(held, idx)
	}
	if len(idx.chunks) > mergeEvery {
		t.Errorf("%d chunks, want at most %d", len(idx.chunks), mergeEvery)
	}
	for n, h := range held {
		for call := uint32(0); call < 3*mergeEvery; call++ {
			row, ok := h.row(2*call + 1)
			if want := call <= uint32(n); ok != want || (ok && row != retiredGenBase+call) {
				t.Fatalf("index after call %d: gen %d -> %d, %v; want row %d: %v", n, 2*call+1, row, ok, retiredGenBase+call, want)
			}
		}
	}
}
