package main

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/bpf"
)

// asNobody runs zcprof as uid 65534 holding exactly caps (ambient, so the
// binary needs no file capabilities).
func asNobody(caps []uintptr, args ...string) *exec.Cmd {
	cmd := exec.Command(zcprofBin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential:  &syscall.Credential{Uid: 65534, Gid: 65534},
		AmbientCaps: caps,
	}
	return cmd
}

// The README's capability list is true: as a non-root user with exactly
// CAP_BPF, CAP_PERFMON and CAP_SYSLOG, profile and run work and leave no
// program loaded; with one of them missing, the one line names it.
func TestReadmeCapabilities(t *testing.T) {
	requireBPF(t)
	all := []uintptr{unix.CAP_BPF, unix.CAP_PERFMON, unix.CAP_SYSLOG}
	for _, args := range [][]string{
		{"profile", "-a", "-d", "300ms", "--json"},
		{"run", "--method", "write", "--bytes", "1M", "-q", "--json"},
	} {
		r := run(t, asNobody(all, args...))
		if r.code != 0 {
			t.Errorf("zcprof %v with %v: exit %d, stderr %q", args, all, r.code, r.stderr)
			continue
		}
		// Without CAP_SYS_ADMIN zcprof cannot look programs up by id to
		// wait for the kernel to free them (an RCU grace period after the
		// last fd closes); the test, as root, waits as zcprof would.
		ids := decode(t, r.stdout).Backends.ProgramIDs
		bpf.WaitGone(ids)
		assertGone(t, ids)
	}
	for _, c := range []struct {
		caps      []uintptr
		want, not string
	}{
		{[]uintptr{unix.CAP_BPF, unix.CAP_SYSLOG}, "needs CAP_PERFMON, which this process lacks", "memlock"},
		{[]uintptr{unix.CAP_PERFMON, unix.CAP_SYSLOG}, "needs CAP_BPF, which this process lacks", "memlock"},
		{nil, "needs CAP_BPF and CAP_PERFMON, which this process lacks", "memlock"},
		{[]uintptr{unix.CAP_BPF, unix.CAP_PERFMON}, "needs CAP_SYSLOG", "kptr_restrict"},
	} {
		for _, args := range [][]string{{"profile", "-a", "-d", "300ms"}, {"run", "--method", "write", "--bytes", "1M", "-q"}} {
			r := run(t, asNobody(c.caps, args...))
			oneLine(t, args, r, c.want)
			if strings.Contains(r.stderr, c.not) {
				t.Errorf("zcprof %v with caps %v: %q mentions %q", args, c.caps, r.stderr, c.not)
			}
		}
	}
}
