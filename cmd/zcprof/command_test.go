package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// gone: pid no longer runs (exited, or a zombie nobody has reaped yet).
func gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func waitGone(pid int, within time.Duration) bool {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if gone(pid) {
			return true
		}
	}
	return gone(pid)
}

// startCommand starts `zcprof profile ARGS -- sh -c 'echo $$ > pidfile;
// exec sleep 60'` and returns it with the command's pid.
func startCommand(t *testing.T, stdout io.Writer, args ...string) (*exec.Cmd, int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	args = append(append([]string{"profile"}, args...), "--", "sh", "-c", "echo $$ > "+pidFile+"; exec sleep 60")
	cmd := exec.Command(zcprofBin, args...)
	cmd.Stdout = stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return cmd, pid
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatal("the command did not start")
	return nil, 0
}

// A SIGKILLed zcprof takes its command with it (PR_SET_PDEATHSIG), as
// timeout(1) does: no orphan goes on unmeasured.
func TestCommandDiesWithZcprof(t *testing.T) {
	requireBPF(t)
	cmd, pid := startCommand(t, nil, "-o", os.DevNull)
	cmd.Process.Kill()
	cmd.Wait()
	if !waitGone(pid, 5*time.Second) {
		exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
		t.Fatalf("command %d outlived a SIGKILLed zcprof", pid)
	}
}

// -d with a command ends it when the time is up, then reports; the exit
// is 0 (the run ended as asked).
func TestDurationStopsTheCommand(t *testing.T) {
	requireBPF(t)
	start := time.Now()
	var out strings.Builder
	cmd, pid := startCommand(t, &out, "-d", "1s", "--json")
	err := cmd.Wait()
	if err != nil {
		t.Errorf("exit: %v", err)
	}
	if el := time.Since(start); el > 15*time.Second {
		t.Errorf("took %v", el)
	}
	if !gone(pid) {
		exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
		t.Errorf("command %d still runs after -d", pid)
	}
	d := decode(t, out.String())
	if !strings.Contains(strings.Join(d.Warnings, "\n"), "the command was stopped") {
		t.Errorf("warnings %q do not say the command was stopped", d.Warnings)
	}
}
