package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/workload"
	"github.com/zcprof/zcprof/workload/netns"
)

func TestRunBadInputIsOneLine(t *testing.T) {
	n := strconv.Itoa(runtime.NumCPU())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--size", "0"}, `size "0" must be positive`},
		{[]string{"run", "--size", "-1"}, `size "-1" must be positive`},
		{[]string{"run", "--size", "garbage"}, `"garbage" is not a size`},
		{[]string{"run", "--method", "write,carrier-pigeon"}, `unknown method "carrier-pigeon"`},
		{[]string{"run", "--rx-method", "mmap"}, `unknown rx method "mmap"`},
		{[]string{"run", "--cpus", "0:" + n}, "out of range"},
		{[]string{"run", "--cpus", "0"}, "want SENDER:RECEIVER"},
		{[]string{"run", "--streams", "100000"}, "--streams 100000"},
		{[]string{"run", "--streams", "0"}, "must be positive"},
		{[]string{"run", "--duration", "-1s"}, "must be positive"},
		{[]string{"run", "--duration", "1s", "--bytes", "1M"}, "either --duration or --bytes"},
		{[]string{"run", "--bytes", "0"}, "must be positive"},
		{[]string{"run", "--repeat", "0"}, "--repeat 0"},
		{[]string{"run", "--ci", "95"}, "LEVEL,WIDTH"},
		{[]string{"run", "--ci", "95,5", "--repeat", "2"}, "at least 3"},
		{[]string{"run", "--topology", "mars"}, `unknown topology "mars"`},
		{[]string{"run", "--rx-method", "zerocopy", "--size", "1000"}, "multiple of 4096"},
		{[]string{"run", "extra"}, "unknown command"},
		{[]string{"run", "--backend", "dtrace"}, `--backend "dtrace": unknown`},
		{[]string{"run", "--sample-hz", "0"}, "--sample-hz 0"},
		{[]string{"run", "--backend", "none", "--folded", "/tmp/x"}, "drop --backend none"},
	} {
		r := run(t, exec.Command(zcprofBin, c.args...))
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code == 0 || len(lines) != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("zcprof %v: exit %d, stderr %q; want one line containing %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

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
		if len(ownNamespaces(t, pid)) == 2 && len(progs) >= 10 && len(links) >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("zcprof run did not start: %d namespaces, %d programs, %d links; stderr %q",
				len(ownNamespaces(t, pid)), len(progs), len(links), stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
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
	if ns := ownNamespaces(t, pid); len(ns) != 0 {
		t.Errorf("namespaces left behind: %v", ns)
	}
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

// ownNamespaces lists the namespaces a zcprof process created.
func ownNamespaces(t *testing.T, pid int) []string {
	t.Helper()
	names, err := netns.List()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if p, ok := netns.OwnerPID(n); ok && p == pid {
			out = append(out, n)
		}
	}
	return out
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
