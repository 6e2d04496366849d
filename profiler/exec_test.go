package profiler

import (
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/testenv"
)

// execEnv makes this test binary a child whose non-leader thread execs:
// the leader burns execLeaderCPU, a second thread execBeforeCPU, then that
// thread execs this binary again (execStageEnv set), which burns
// execAfterCPU on its main thread, the same task, now under the leader's
// pid (de_thread swaps the two pids), and writes execCounts.
const (
	execEnv      = "ZCPROF_TEST_EXEC_FROM_THREAD"
	execStageEnv = "ZCPROF_TEST_EXEC_STAGE"
)

const (
	execLeaderCPU = 150 * time.Millisecond
	execBeforeCPU = 600 * time.Millisecond
	execAfterCPU  = 400 * time.Millisecond
)

type execCounts struct {
	PID, ExecTID int
	// ThreadCPUNS: the exec'ing task's own clock at the end, before and
	// after the exec (exec keeps the task and its runtime).
	ThreadCPUNS uint64
}

func init() {
	childMode(execEnv, "exec", func(out string) error {
		if tid := os.Getenv(execStageEnv); tid != "" {
			burnThread(execAfterCPU)
			var r execCounts
			r.PID = os.Getpid()
			var err error
			if r.ExecTID, err = strconv.Atoi(tid); err != nil {
				return err
			}
			r.ThreadCPUNS = threadCPU()
			return writeResult(out, r)
		}
		// The leader runs this init; Go keeps init on the main thread.
		runtime.LockOSThread()
		burnThread(execLeaderCPU)
		errc := make(chan error, 1)
		go func() {
			runtime.LockOSThread() // a thread of its own, not the leader
			burnThread(execBeforeCPU)
			env := append(os.Environ(), execStageEnv+"="+strconv.Itoa(unix.Gettid()))
			errc <- syscall.Exec(os.Args[0], []string{os.Args[0], "-test.run=^$"}, env)
		}()
		return <-errc // only if the exec failed
	})
}

// A thread that execs while not the leader takes the leader's pid: its
// entry moves with it, so its time before and after the exec is one
// thread's, under the process's pid, and the leader's stays its own.
func TestExecFromNonLeaderThread(t *testing.T) {
	requireBPF(t)
	var r execCounts
	d, p := profileChildMode(t, execEnv, ProfileOptions{Threads: true}, &r)
	if p.PID != r.PID || r.ExecTID == r.PID {
		t.Fatalf("process %d, child says pid %d, exec'ing thread %d", p.PID, r.PID, r.ExecTID)
	}
	// Not the whole process's self-check: in this workload it failed in
	// some runs on other threads, as often without the exec fix as with it
	// (docs/known-issues.md, "A non-leader exec"); logged, and held for the
	// two tasks the exec concerns below.
	t.Logf("self-check: %+v, warnings %q", d.Precision, d.Warnings)
	// The exec'ing task: one entry under the pid, holding what it ran
	// before the exec and after, as its own clock says.
	// The old leader: under the pid (its entry closed before the swap) or
	// under the exec'ing thread's old tid (after it). Other threads of the
	// Go runtime can run as long, in the guests above all.
	var execer, leader []int
	for i, th := range p.Threads {
		ran := th.CPU.RanNS()
		t.Logf("thread %d (%s): ran %d ns, schedstat %d ns", th.TID, th.Comm, ran, th.CPU.SchedstatNS)
		switch {
		case th.TID == r.PID && ran >= uint64(execBeforeCPU+execAfterCPU)*9/10:
			execer = append(execer, i)
		case (th.TID == r.PID || th.TID == r.ExecTID) && ran >= uint64(execLeaderCPU)*9/10:
			leader = append(leader, i)
		}
	}
	if len(execer) != 1 {
		t.Fatalf("want one entry under pid %d with the exec'ing thread's %v before and %v after the exec, found %d", r.PID, execBeforeCPU, execAfterCPU, len(execer))
	}
	th := p.Threads[execer[0]]
	if diff, bound := SchedstatResidual(th.CPU); diff > bound+testenv.PrecisionSlack(th.CPU.SchedstatNS) {
		t.Errorf("exec'ing thread: %d ns as the kernel bills it, schedstat %d ns: off by %d ns (bound %d)", th.CPU.KernelViewNS(), th.CPU.SchedstatNS, diff, bound)
	}
	// Its own clock was read before the child wrote its result and the Go
	// runtime exited: the entry holds at least that, and little more.
	if kv := th.CPU.KernelViewNS(); kv < r.ThreadCPUNS*98/100 || kv > r.ThreadCPUNS+uint64(20*time.Millisecond) {
		t.Errorf("exec'ing thread: %d ns as the kernel bills it, its own clock %d ns", kv, r.ThreadCPUNS)
	}
	if len(leader) != 1 {
		t.Errorf("want one entry under pid %d or tid %d with the old leader's %v, found %d", r.PID, r.ExecTID, execLeaderCPU, len(leader))
	}
}
