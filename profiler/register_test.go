package profiler

import (
	"os/exec"
	"testing"
	"time"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/procfs"
)

// A thread listed in /proc that exits before its entry is inserted is
// never switched out dead with one, so nothing would remove it and a
// later task reusing its tid would inherit it: register leaves no entry
// for a thread that is gone or a zombie, and keeps the one of a live
// thread.
func TestRegisterLeavesNoEntryForExitedThreads(t *testing.T) {
	requireBPF(t)
	sess, err := Open(Options{ByteClasses: byteclass.Off})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	has := func(tid int) bool {
		var th bpf.AccountingZcThread
		return sess.core.Maps["threads"].Lookup(uint32(tid), &th) == nil
	}

	live := exec.Command("sleep", "30")
	zombie := exec.Command("true")
	gone := exec.Command("true")
	for _, c := range []*exec.Cmd{live, zombie, gone} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer live.Process.Kill()
	if err := gone.Wait(); err != nil {
		t.Fatal(err)
	}
	// Not waited for: it stays a zombie until the end of the test.
	defer zombie.Wait()
	for deadline := time.Now().Add(10 * time.Second); ; {
		st, err := procfs.ReadTaskStat(zombie.Process.Pid, zombie.Process.Pid)
		if err == nil && st.State == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never became a zombie: %+v, %v", zombie.Process.Pid, st, err)
		}
		time.Sleep(10 * time.Millisecond)
	}

	for _, c := range []struct {
		name string
		pid  int
		want bool
	}{{"live", live.Process.Pid, true}, {"zombie", zombie.Process.Pid, false}, {"reaped", gone.Process.Pid, false}} {
		if err := sess.register(c.pid, c.pid); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := has(c.pid); got != c.want {
			t.Errorf("%s thread %d: entry in threads %v, want %v", c.name, c.pid, got, c.want)
		}
	}
}
