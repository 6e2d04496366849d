package profiler

import (
	"runtime"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/taxonomy"
	"github.com/zcprof/zcprof/profiler/testenv"
)

// A running target's counts are on its CPU until it is switched out, then
// in its entry (entries.go). Snapshots taken while it makes calls and is
// switched out and in all the time count each call and each nanosecond
// once: a snapshot never has more calls, or more on-CPU time, than a later
// one (counted twice), and the last one, after the thread stopped, has
// exactly the calls it made.
//
// Time may go back by the window of a context switch sched_switch did not
// report, as our PVM guests' kernel sometimes does (a snapshot gives that
// window to the thread it found running, the next event gives part of it
// to the other task), and under qemu by a switch's latency: a switch is
// cut where the kernel ended the run (se.exec_start), before sched_switch
// fires, and a snapshot in between counted the open span up to its own
// clock. Natively that latency is about a microsecond and the thread's
// progress between two snapshots exceeds it; under qemu's emulation it
// reaches a millisecond (0.94 ms seen on 6.1), so there the time check
// only logs.
func TestSnapshotsCountEachCallOnce(t *testing.T) {
	requireBPF(t)
	const calls = 200_000
	cpu := 1 % numCPUs()

	ready := make(chan int, 2)
	stop := make(chan bool)
	var spinning atomic.Bool
	spinning.Store(true)
	// A spinner on the worker's CPU: each sched_yield of the worker is a
	// switch to it and back.
	go func() {
		runtime.LockOSThread()
		pinThread(t, cpu)
		ready <- unix.Gettid()
		for spinning.Load() {
		}
	}()
	<-ready
	go func() {
		runtime.LockOSThread()
		pinThread(t, cpu)
		ready <- unix.Gettid()
		<-stop
		for i := 0; i < calls; i++ {
			unix.Poll(nil, 0) // wait: one call each
			if i%7 == 0 {
				unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
			}
		}
		stop <- true
	}()
	tid := <-ready
	defer spinning.Store(false)

	sess, err := Open(Options{Target: Target{TIDs: []int{tid}}, ByteClasses: byteclass.Off})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	// The thread's wait calls, its on-CPU time in all, and the windows
	// of unreported switches it had a part in.
	waits := func(s *Snapshot) (calls, ns, uncertain uint64) {
		for gen, th := range s.Threads {
			if th.TID != tid {
				continue
			}
			for k, c := range s.Counters {
				switch {
				case k.Gen != gen:
				case k.Ctx.OnCPU():
					ns += c.NS
				case k.Ctx == taxonomy.CtxSwitchUncertain:
					uncertain += c.NS
				}
			}
			return s.Counters[Key{gen, taxonomy.PathWait, taxonomy.CtxTask}].Calls, ns, uncertain
		}
		return 0, 0, 0
	}
	first, err := sess.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	base, _, _ := waits(first)
	stop <- true
	var last, lastNS, lastUncertain uint64
	snaps := 0
	for done := false; !done; {
		select {
		case <-stop:
			done = true
		default:
		}
		s, err := sess.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		snaps++
		n, ns, uncertain := waits(s)
		n -= base
		if n < last {
			t.Fatalf("snapshot %d: %d calls after %d in the one before: counted twice or lost", snaps, n, last)
		}
		if ns < lastNS {
			if back := lastNS - ns; back > uncertain-lastUncertain && !testenv.InVM() {
				t.Fatalf("snapshot %d: %d ns on CPU after %d in the one before: counted twice or lost (unreported switches' windows grew by %d ns)",
					snaps, ns, lastNS, uncertain-lastUncertain)
			}
			t.Logf("snapshot %d: %d ns back (unreported switches' windows grew by %d ns)", snaps, lastNS-ns, uncertain-lastUncertain)
		}
		last, lastNS, lastUncertain = n, ns, uncertain
	}
	if last != calls {
		t.Fatalf("%d calls counted after the thread stopped, want %d (%d snapshots)", last, calls, snaps)
	}
	t.Logf("%d snapshots while the thread ran", snaps)
}

func pinThread(t *testing.T, cpu int) {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Error(err)
	}
}

func numCPUs() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 1
	}
	return set.Count()
}
