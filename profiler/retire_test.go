package profiler

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime"
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
		Retired:     map[int]uint32{100: row},
		retiredRows: map[uint32]*retiredRow{row: r1}}
	r2 := r1.grown()
	r2.counters[write] = r2.counters[write].add(Counter{Calls: 3, NS: 12 * ms, Bytes: 30})
	r2.clock.RuntimeNS += 50 * ms // since its baseline: born after the origin
	b := &Snapshot{MonoNS: 2000 * ms, OriginNS: 100 * ms, Counters: map[Key]Counter{}, Threads: map[uint32]ThreadInfo{}, Clocks: map[uint32]Clock{},
		Retired: map[int]uint32{100: row}, retiredRows: map[uint32]*retiredRow{row: r2}}
	c := &Snapshot{MonoNS: 3000 * ms, OriginNS: 100 * ms, Counters: map[Key]Counter{}, Threads: map[uint32]ThreadInfo{}, Clocks: map[uint32]Clock{},
		Retired: map[int]uint32{100: row}, retiredRows: map[uint32]*retiredRow{row: r2}}

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
	rowGen = first.Retired[child]
	if rowGen == 0 {
		t.Fatalf("no retired row for process %d after its first writer exited: %v", child, first.Retired)
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
