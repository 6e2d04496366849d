package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/testenv"
)

// These tests drive the real binary, as a user would.

var zcprofBin string

func TestMain(m *testing.M) {
	execWithoutIOUring()
	runBusy()
	dir, err := os.MkdirTemp("", "zcprof-bin-")
	if err != nil {
		panic(err)
	}
	os.Chmod(dir, 0o755) // the privileges test runs it as nobody
	zcprofBin = filepath.Join(dir, "zcprof")
	build := exec.Command("go", "build", "-o", zcprofBin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build zcprof:", err)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func requireBPF(t *testing.T) { testenv.RequireBPF(t) }

type result struct {
	stdout, stderr string
	code           int
}

func run(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	code := finished(t, cmd.Run())
	return result{out.String(), errb.String(), code}
}

// finished is a command's exit status (exitCode); failing to run it at all
// fails the test.
func finished(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return exitCode(err)
}

func decode(t *testing.T, s string) *report.Document {
	t.Helper()
	var d report.Document
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		t.Fatalf("not a JSON document: %v\n%s", err, s)
	}
	return &d
}

// assertGone: none of the program ids is loaded any more.
func assertGone(t *testing.T, ids []uint32) {
	t.Helper()
	if len(ids) == 0 {
		t.Fatal("the document lists no program ids")
	}
	for _, id := range ids {
		if p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id)); err == nil {
			p.Close()
			t.Errorf("program %d still loaded after zcprof exited", id)
		}
	}
}

func TestMissingPidAndPrivileges(t *testing.T) {
	requireBPF(t)
	r := run(t, exec.Command(zcprofBin, "profile", "--pid", "999999999", "-d", "1s"))
	if r.code == 0 || strings.TrimSpace(r.stderr) != "zcprof: process 999999999 does not exist" {
		t.Errorf("missing pid: exit %d, stderr %q", r.code, r.stderr)
	}
	// As nobody: one line naming the capabilities, nothing attached
	// (TestReadmeCapabilities: each one missing).
	args := []string{"profile", "-a", "-d", "1s"}
	oneLine(t, args, run(t, asNobody(nil, args...)), "needs CAP_BPF and CAP_PERFMON")
}

func TestSIGINTDetachesEverything(t *testing.T) {
	requireBPF(t)
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(zcprofBin, "profile", "--json", "--", "sh", "-c", "echo > "+ready+"; exec sleep 30")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("command never started; stderr %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("after SIGINT: %v (want the command's status 130, killed by SIGINT); stderr %s", err, errb.String())
	}
	d := decode(t, out.String())
	assertGone(t, d.Backends.ProgramIDs)
	found := false
	for _, p := range d.Processes {
		found = found || p.Comm == "sleep"
	}
	if !found {
		t.Errorf("the interrupted command is not in the report: %+v", d.Processes)
	}
}

func TestPidExitEndsTheRun(t *testing.T) {
	requireBPF(t)
	// The target does its work only once zcprof says it is attached, so
	// however long zcprof takes to start, the report has the target's CPU.
	// It waits on a FIFO, not a polling loop, so that it forks no child
	// (which --pid would follow) and takes no CPU from zcprof's start.
	start := filepath.Join(t.TempDir(), "start")
	if err := unix.Mkfifo(start, 0o600); err != nil {
		t.Fatal(err)
	}
	busy := exec.Command("sh", "-c", "read go < "+start+"; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer busy.Wait()
	defer busy.Process.Kill() // on a failure before the FIFO is written
	p := startProfile(t, exec.Command(zcprofBin, "profile", "--json", "--pid", fmt.Sprint(busy.Process.Pid)))
	if want := fmt.Sprintf("zcprof: profiling pid %d; stopping when it exits or on Ctrl-C", busy.Process.Pid); p.attachLine != want {
		t.Errorf("attach line %q, want %q", p.attachLine, want)
	}
	if err := os.WriteFile(start, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := p.wait(t)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	d := decode(t, r.stdout)
	if len(d.Processes) != 1 || d.Processes[0].PID != busy.Process.Pid || d.Processes[0].CPU.UserNS == 0 {
		t.Fatalf("processes %+v", d.Processes)
	}
	if !strings.Contains(strings.Join(d.Warnings, "\n"), "exited") {
		t.Errorf("no note that the target exited: %v", d.Warnings)
	}
	assertGone(t, d.Backends.ProgramIDs)
}

// attachedProfile is a zcprof profile that has said it is attached.
type attachedProfile struct {
	cmd        *exec.Cmd
	out        bytes.Buffer
	errb       *bytes.Buffer
	copied     chan struct{}
	attachLine string
}

// startProfile starts a zcprof profile without a command and returns once
// its stderr says the programs are attached ("zcprof: profiling ...").
func startProfile(t *testing.T, cmd *exec.Cmd) *attachedProfile {
	t.Helper()
	p := &attachedProfile{cmd: cmd, errb: &bytes.Buffer{}, copied: make(chan struct{})}
	cmd.Stdout = &p.out
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(pipe)
	for {
		line, err := lines.ReadString('\n')
		p.errb.WriteString(line)
		if strings.HasPrefix(line, "zcprof: profiling ") {
			p.attachLine = strings.TrimSuffix(line, "\n")
			break
		}
		if err != nil {
			cmd.Wait()
			t.Fatalf("zcprof ended before it attached: %s", p.errb.String())
		}
	}
	go func() {
		io.Copy(p.errb, lines)
		close(p.copied)
	}()
	return p
}

// wait reads the rest of the profile's output and its exit status.
func (p *attachedProfile) wait(t *testing.T) result {
	t.Helper()
	<-p.copied // Wait closes the pipe: read it to the end first
	code := finished(t, p.cmd.Wait())
	return result{p.out.String(), p.errb.String(), code}
}

func TestCommCgroupAndAll(t *testing.T) {
	requireBPF(t)
	// A process with a name of its own: a shell loop run through a
	// symlink named zcprofcommtst.
	dir := t.TempDir()
	sh, _ := exec.LookPath("sh")
	link := filepath.Join(dir, "zcprofcommtst")
	if err := os.Symlink(sh, link); err != nil {
		t.Fatal(err)
	}
	loop := "while :; do :; done"
	busy := exec.Command(link, "-c", loop)
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { busy.Process.Kill(); busy.Wait() }()
	r := run(t, exec.Command(zcprofBin, "profile", "--json", "--comm", "zcprofcommtst", "-d", "1500ms"))
	if r.code != 0 {
		t.Fatalf("--comm: exit %d: %s", r.code, r.stderr)
	}
	d := decode(t, r.stdout)
	if len(d.Processes) != 1 || d.Processes[0].PID != busy.Process.Pid {
		t.Errorf("--comm: processes %+v", d.Processes)
	}

	// The whole system: the busy process is there, zcprof itself is not.
	all := exec.Command(zcprofBin, "profile", "--json", "-a", "-d", "1s")
	r = run(t, all)
	if r.code != 0 {
		t.Fatalf("-a: exit %d: %s", r.code, r.stderr)
	}
	d = decode(t, r.stdout)
	var sawBusy bool
	for _, p := range d.Processes {
		sawBusy = sawBusy || p.PID == busy.Process.Pid
		// By pid: other zcprof processes (parallel tests) are fair game.
		if p.PID == all.Process.Pid {
			t.Errorf("-a profiled zcprof itself")
		}
	}
	if !sawBusy {
		t.Errorf("-a: busy process %d missing", busy.Process.Pid)
	}

	// A cgroup v2 group holding one busy shell.
	unified := "/sys/fs/cgroup/unified"
	if _, err := os.Stat(filepath.Join(unified, "cgroup.procs")); err != nil {
		unified = "/sys/fs/cgroup"
	}
	cg := filepath.Join(unified, fmt.Sprintf("zcprof-test-%d", os.Getpid()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatalf("create cgroup: %v", err)
	}
	defer os.Remove(cg)
	inCg := exec.Command("sh", "-c", "read x; "+loop)
	stdin, _ := inCg.StdinPipe()
	if err := inCg.Start(); err != nil {
		t.Fatal(err)
	}
	defer inCg.Process.Kill()
	if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(fmt.Sprint(inCg.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	stdin.Write([]byte("go\n"))
	r = run(t, exec.Command(zcprofBin, "profile", "--json", "--cgroup", cg, "-d", "1s"))
	inCg.Process.Kill()
	inCg.Wait()
	if r.code != 0 {
		t.Fatalf("--cgroup: exit %d: %s", r.code, r.stderr)
	}
	d = decode(t, r.stdout)
	if len(d.Processes) != 1 || d.Processes[0].PID != inCg.Process.Pid {
		t.Errorf("--cgroup: processes %+v", d.Processes)
	}
}
