package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/pseudofs"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/testenv"
	"github.com/zcprof/zcprof/workload"
	"github.com/zcprof/zcprof/workload/netns"
)

// TestRunJSONAndTable: one small cell per output format.
func TestRunJSONAndTable(t *testing.T) {
	requireBPF(t)
	r := run(t, exec.Command(zcprofBin, "run", "--method", "write", "--bytes", "8M", "--json", "-q"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	d := decode(t, r.stdout)
	if d.Command != "run" || len(d.Cells) != 1 {
		t.Fatalf("command %q, %d cells", d.Command, len(d.Cells))
	}
	c := d.Cells[0]
	if c.Method != "write" || c.RxMethod != "read" || c.Size != 64<<10 || c.Streams != 1 ||
		c.Workload == nil || c.Workload.ReceivedBytes != 8<<20 || c.ThroughputBps <= 0 {
		t.Errorf("cell %+v", c)
	}
	assertGone(t, d.Backends.ProgramIDs)
	// Categories by default (--backend auto): the sampler on kernels that
	// refuse fentry and kprobes, like ours.
	if d.Backends.Attribution == "" {
		t.Errorf("no attribution backend: %v", d.Backends.Unavailable)
	}
	for _, side := range []struct {
		p    report.Process
		path string
	}{{c.Sender, "tx.write"}, {c.Receiver, "rx.read"}} {
		var p *report.Path
		for i := range side.p.Paths {
			if side.p.Paths[i].Path == side.path {
				p = &side.p.Paths[i]
			}
		}
		if p == nil || len(p.Categories) == 0 {
			t.Errorf("%s: no categories: %+v", side.path, p)
		}
	}

	r = run(t, exec.Command(zcprofBin, "run", "--method", "write", "--bytes", "4M", "--json", "-q", "--backend", "none"))
	if r.code != 0 {
		t.Fatalf("--backend none: exit %d: %s", r.code, r.stderr)
	}
	d = decode(t, r.stdout)
	if d.Backends.Attribution != "" || d.Backends.Unavailable["attribution"] != "turned off (--backend none)" ||
		len(d.Cells) != 1 || len(d.Cells[0].Sender.Paths) == 0 || len(d.Cells[0].Sender.Paths[0].Categories) != 0 {
		t.Errorf("--backend none: attribution %q (%q), cells %+v", d.Backends.Attribution, d.Backends.Unavailable["attribution"], d.Cells)
	}

	r = run(t, exec.Command(zcprofBin, "run", "--method", "write,msg_zerocopy", "--bytes", "4M"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"write→read 64K ×1", "msg_zerocopy→read 64K ×1", "sender", "receiver", "verdicts:", "COPIED",
		"inside the kernel", "sender tx.write"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "cell 2/2") {
		t.Errorf("no progress lines on stderr: %q", r.stderr)
	}
}

// TestRunSIGINT: Ctrl-C in the middle of a netns run exits non-zero with
// one line and leaves no namespace, veth, temp file, BPF program or link.
func TestRunSIGINT(t *testing.T) {
	requireBPF(t)
	cmd := exec.Command(zcprofBin, "run", "--topology", "netns", "--method", "write", "--duration", "30s", "-q")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer cmd.Process.Kill()

	// Running: its namespaces exist and it holds the programs' fds.
	var progs, links []uint32
	for deadline := time.Now().Add(20 * time.Second); ; {
		progs, links = bpfObjects(pid)
		if len(netns.HeldBy(pid)) == 2 && len(progs) >= 10 && len(links) >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("zcprof run did not start: %d namespaces, %d programs, %d links; stderr %q",
				len(netns.HeldBy(pid)), len(progs), len(links), stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	held := netns.HeldBy(pid)
	time.Sleep(300 * time.Millisecond) // data is flowing
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Errorf("exit: %v, want a non-zero status", err)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "interrupted") {
		t.Errorf("stderr %q, want one line saying it was interrupted", stderr.String())
	}
	assertNamespacesGone(t, held)
	if out, err := exec.Command("ip", "-o", "link", "show").Output(); err != nil || strings.Contains(string(out), "zc-tx") || strings.Contains(string(out), "zc-rx") {
		t.Errorf("veth left in the host namespace (or ip failed: %v):\n%s", err, out)
	}
	if files, _ := filepath.Glob(filepath.Join(os.TempDir(), "zcprof-"+strconv.Itoa(pid)+"-*")); len(files) != 0 {
		t.Errorf("temp files left behind: %v", files)
	}
	for _, id := range progs {
		if p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id)); err == nil {
			p.Close()
			t.Errorf("program %d still loaded", id)
		}
	}
	for _, id := range links {
		if l, err := link.NewFromID(link.ID(id)); err == nil {
			l.Close()
			t.Errorf("link %d still exists", id)
		}
	}
	// The workload's own CleanupStale would find nothing of it either.
	if removed, err := workload.CleanupStale(); err != nil || len(removed) != 0 {
		t.Errorf("CleanupStale after the run: %v, %v", removed, err)
	}
}

// assertNamespacesGone: the kernel freed the namespaces (nothing refers
// to them any more), allowing it a moment after the holder exited.
func assertNamespacesGone(t *testing.T, ids []string) {
	t.Helper()
	for _, id := range ids {
		deadline := time.Now().Add(5 * time.Second)
		for netns.InUse(id) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if netns.InUse(id) {
			t.Errorf("namespace %s left behind", id)
		}
	}
}

// bpfObjects reads the program and link ids a process holds from its fds'
// fdinfo (prog_id: / link_id:), so the test follows exactly its objects.
func bpfObjects(pid int) (progs, links []uint32) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fdinfo")
	ents, _ := os.ReadDir(dir)
	seen := map[string]bool{}
	for _, e := range ents {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		isLink := false
		var prog uint64
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
			if err != nil {
				continue
			}
			switch k {
			case "link_id":
				isLink = true
				if key := "l" + strings.TrimSpace(v); !seen[key] {
					seen[key] = true
					links = append(links, uint32(n))
				}
			case "prog_id":
				prog = n
			}
		}
		f.Close()
		if prog != 0 && !isLink {
			if key := "p" + strconv.FormatUint(prog, 10); !seen[key] {
				seen[key] = true
				progs = append(progs, uint32(prog))
			}
		}
	}
	return progs, links
}

// A SIGKILLed `run --topology netns` leaves nothing: its namespaces and
// payload file were held by descriptor only, its programs by their fds.
func TestRunSIGKILLLeavesNothing(t *testing.T) {
	requireBPF(t)
	cmd := exec.Command(zcprofBin, "run", "--topology", "netns", "--method", "sendfile", "--duration", "30s", "-q")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer cmd.Process.Kill()
	var progs []uint32
	var held []string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		progs, _ = bpfObjects(pid)
		if held = netns.HeldBy(pid); len(held) == 2 && len(progs) >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("zcprof run did not start: %d namespaces, %d programs", len(held), len(progs))
		}
	}
	time.Sleep(300 * time.Millisecond) // data is flowing
	cmd.Process.Kill()
	cmd.Wait()
	assertNamespacesGone(t, held)
	if files, _ := filepath.Glob(filepath.Join(os.TempDir(), "zcprof-"+strconv.Itoa(pid)+"-*")); len(files) != 0 {
		t.Errorf("temp files left behind: %v", files)
	}
	if out, err := exec.Command("ip", "-o", "link", "show").Output(); err != nil || strings.Contains(string(out), "zc-tx") || strings.Contains(string(out), "zc-rx") {
		t.Errorf("veth left in the host namespace (or ip failed: %v):\n%s", err, out)
	}
	bpf.WaitGone(progs)
	for _, id := range progs {
		if p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id)); err == nil {
			p.Close()
			t.Errorf("program %d still loaded", id)
		}
	}
	// A killed zcprof cannot unmount the tracefs it mounted: the next
	// command, whatever it is, does.
	r := run(t, exec.Command(zcprofBin, "profile", "--pid", "999999999"))
	if r.code == 0 || pseudofs.Orphaned(pseudofs.Tracefs) {
		t.Errorf("the next zcprof (exit %d) left the killed one's tracefs mount", r.code)
	}
}

// `serve` removes a tracefs mount a killed zcprof left, as every other
// command does (the agent's own leftovers it removes itself).
func TestServeRemovesStaleMounts(t *testing.T) {
	if !testenv.InFreshMounts(t) {
		return
	}
	cmd := exec.Command(zcprofBin, "profile", "-a", "--duration", "30s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for deadline := time.Now().Add(20 * time.Second); !pseudofs.Tracefs.Available(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("zcprof profile did not mount tracefs")
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	if !pseudofs.Orphaned(pseudofs.Tracefs) {
		t.Fatal("the killed zcprof's tracefs mount is not orphaned: nothing to test")
	}
	serve := exec.Command(zcprofBin, "serve", "--stdio")
	serve.Stdin = strings.NewReader("") // the client hangs up at once
	serve.CombinedOutput()
	if pseudofs.Orphaned(pseudofs.Tracefs) {
		t.Error("zcprof serve left the killed zcprof's tracefs mount")
	}
}
