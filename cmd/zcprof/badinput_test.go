package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/pseudofs"
	"github.com/zcprof/zcprof/workload/netns"
)

// Every bad input and fault: one line on stderr, a non-zero exit, and
// nothing left behind (no BPF program, no namespace, no temp or output
// file, no tracefs mount zcprof made).
func TestBadInputsLeaveNothing(t *testing.T) {
	requireBPF(t)
	n := strconv.Itoa(runtime.NumCPU())
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	none := []uintptr{}
	for _, c := range []struct {
		args []string
		want string
		caps []uintptr // non-nil: run as nobody with exactly these
	}{
		// profile: flags and targets
		{args: []string{"profile", "--bogus"}, want: "unknown flag: --bogus"},
		{args: []string{"profile", "-a", "--duration", "1x"}, want: `invalid argument "1x"`},
		{args: []string{"profile", "-a", "--duration", "-1s"}, want: "must be positive"},
		{args: []string{"profile", "-a", "--interval", "10ms"}, want: "at least 100ms"},
		{args: []string{"profile"}, want: "nothing to profile"},
		{args: []string{"profile", "--pid", "-3"}, want: "not a process id"},
		{args: []string{"profile", "--comm", "a-name-longer-than-15"}, want: "at most 15 characters"},
		{args: []string{"profile", "-a", "--pid", "1"}, want: "-a already profiles everything"},
		{args: []string{"profile", "sleep", "1"}, want: "put the command to profile after --"},
		{args: []string{"profile", "--", "/no/such/command"}, want: "no such file"},
		{args: []string{"profile", "--pid", "999999999", "-d", "1s"}, want: "process 999999999 does not exist"},
		{args: []string{"profile", "--cgroup", "/sys/fs/cgroup/no-such-group", "-d", "1s"}, want: "no-such-group"},
		// profile: backends
		{args: []string{"profile", "-a", "--accounting", "bogus"}, want: `--accounting "bogus": unknown`},
		{args: []string{"profile", "-a", "--byte-classes", "bogus"}, want: `--byte-classes "bogus": unknown`},
		{args: []string{"profile", "-a", "--backend", "dtrace"}, want: `--backend "dtrace": unknown`},
		{args: []string{"profile", "-a", "--sample-hz", "0"}, want: `invalid argument "0" for "--sample-hz" flag: must be auto or between 1 and 100000`},
		{args: []string{"profile", "-a", "--backend", "none", "--pprof", out}, want: "drop --backend none"},
		// profile: outputs and metrics
		{args: []string{"profile", "-a", "--json", "--csv"}, want: "either --json or --csv"},
		{args: []string{"profile", "-a", "-d", "30s", "--html", "/nonexistent/x.html"}, want: "--html: open /nonexistent/x.html"},
		{args: []string{"profile", "-a", "-d", "30s", "-o", "/nonexistent/x"}, want: "--output: open /nonexistent/x"},
		{args: []string{"profile", "-a", "-d", "30s", "--folded", dir}, want: "is a directory"},
		{args: []string{"profile", "-a", "-d", "30s", "--html", out, "-o", out}, want: "both write " + out},
		{args: []string{"profile", "-a", "--metrics", "nonsense"}, want: "want [HOST]:PORT"},
		{args: []string{"profile", "-a", "-d", "30s", "--metrics", busy.Addr().String()}, want: "address already in use"},
		// run
		{args: []string{"run", "--size", "0"}, want: `size "0" must be positive`},
		{args: []string{"run", "--size", "-1"}, want: `size "-1" must be positive`},
		{args: []string{"run", "--size", "garbage"}, want: `"garbage" is not a size`},
		{args: []string{"run", "--method", "write,carrier-pigeon"}, want: `unknown method "carrier-pigeon"`},
		{args: []string{"run", "--rx-method", "mmap"}, want: `unknown rx method "mmap"`},
		{args: []string{"run", "--cpus", "0:" + n}, want: "out of range"},
		{args: []string{"run", "--cpus", "0"}, want: "want SENDER:RECEIVER"},
		{args: []string{"run", "--streams", "100000"}, want: "--streams 100000"},
		{args: []string{"run", "--streams", "0"}, want: "must be positive"},
		{args: []string{"run", "--duration", "-1s"}, want: "must be positive"},
		{args: []string{"run", "--duration", "1s", "--bytes", "1M"}, want: "either --duration or --bytes"},
		{args: []string{"run", "--bytes", "0"}, want: "must be positive"},
		{args: []string{"run", "--repeat", "0"}, want: "--repeat 0"},
		{args: []string{"run", "--ci", "95"}, want: "LEVEL,WIDTH"},
		{args: []string{"run", "--ci", "95,5", "--repeat", "2"}, want: "at least 3"},
		{args: []string{"run", "--topology", "mars"}, want: `unknown topology "mars"`},
		{args: []string{"run", "--rx-method", "zerocopy", "--size", "1000"}, want: "multiple of 4096"},
		{args: []string{"run", "extra"}, want: "unknown command"},
		{args: []string{"run", "--backend", "dtrace"}, want: `--backend "dtrace": unknown`},
		{args: []string{"run", "--sample-hz", "0"}, want: `invalid argument "0" for "--sample-hz" flag: must be auto or between 1 and 100000`},
		{args: []string{"run", "--backend", "none", "--folded", out}, want: "drop --backend none"},
		{args: []string{"run", "--accounting", "bogus"}, want: `--accounting "bogus": unknown`},
		{args: []string{"run", "--byte-classes", "bogus"}, want: `--byte-classes "bogus": unknown`},
		{args: []string{"run", "--json", "--csv"}, want: "either --json or --csv"},
		{args: []string{"run", "--duration", "30s", "--html", "/nonexistent/x.html"}, want: "--html: open /nonexistent/x.html"},
		{args: []string{"run", "--duration", "30s", "-o", "/nonexistent/x"}, want: "--output: open /nonexistent/x"},
		{args: []string{"run", "--congestion", "no-such-cc", "--bytes", "1M", "-q"}, want: "no-such-cc"},
		{args: []string{"run", "--mss", "40", "--bytes", "1M", "-q"}, want: "--mss 40: the kernel takes a TCP_MAXSEG from 88 to 32767"},
		{args: []string{"run", "--method", "write", "--bytes", "4M", "-q", "--topology", "netns", "--html", "/dev/full"}, want: "--html: write /dev/full: no space left on device"},
		// privileges
		{args: []string{"profile", "-a", "-d", "1s"}, want: "needs CAP_BPF and CAP_PERFMON", caps: none},
		{args: []string{"run", "--bytes", "1M", "-q", "--topology", "netns"}, want: "needs CAP_BPF and CAP_PERFMON", caps: none},
		{args: []string{"doctor"}, want: "needs CAP_BPF and CAP_PERFMON", caps: none},
		{args: []string{"profile", "-a", "-d", "300ms"}, want: "needs CAP_PERFMON, which this process lacks", caps: []uintptr{unix.CAP_BPF, unix.CAP_SYSLOG}},
		{args: []string{"run", "--bytes", "1M", "-q"}, want: "needs CAP_BPF, which this process lacks", caps: []uintptr{unix.CAP_PERFMON, unix.CAP_SYSLOG}},
		{args: []string{"profile", "-a", "-d", "300ms"}, want: "needs CAP_SYSLOG", caps: []uintptr{unix.CAP_BPF, unix.CAP_PERFMON}},
		{args: []string{"run", "--bytes", "1M", "-q", "--topology", "netns"}, want: "the netns topology needs CAP_SYS_ADMIN and CAP_NET_ADMIN",
			caps: []uintptr{unix.CAP_BPF, unix.CAP_PERFMON, unix.CAP_SYSLOG}},
		// others
		{args: []string{"doctor", "extra"}, want: "unknown command"},
		{args: []string{"frobnicate"}, want: `unknown command "frobnicate"`},
	} {
		// A mount orphaned before this case is not its doing: a zcprof
		// killed earlier (another test, a run killed on this machine)
		// leaves one until the next command starts, and a bad flag
		// exits before removeLeftovers runs. Remove it as that command
		// would, so the check below sees only what this case left.
		if err := pseudofs.RemoveStale(pseudofs.Tracefs); err != nil {
			t.Fatalf("remove a stale tracefs mount: %v", err)
		}
		progsBefore := loadedPrograms()
		cmd := exec.Command(zcprofBin, c.args...)
		if c.caps != nil {
			cmd = asNobody(c.caps, c.args...)
		}
		r := run(t, cmd)
		oneLine(t, c.args, r, c.want)
		assertNothingLeft(t, c.args, cmd.Process.Pid, progsBefore)
		if _, err := os.Stat(out); err == nil {
			t.Errorf("zcprof %v: left %s", c.args, out)
			os.Remove(out)
		}
		if pseudofs.Orphaned(pseudofs.Tracefs) {
			t.Errorf("zcprof %v: left its tracefs mount with no user", c.args)
		}
	}
}

// assertNothingLeft: the zcprof that ran as pid and has exited left no BPF
// program loaded since progsBefore, no namespace and no temp file.
func assertNothingLeft(t *testing.T, args []string, pid int, progsBefore map[ebpf.ProgramID]bool) {
	t.Helper()
	if left := leftPrograms(progsBefore); len(left) > 0 {
		t.Errorf("zcprof %v: BPF programs left loaded with no holder: %v", args, left)
	}
	if names, _ := netns.List(); slices.ContainsFunc(names, func(n string) bool { o, _ := netns.OwnerPID(n); return o == pid }) {
		t.Errorf("zcprof %v: namespaces left: %v", args, names)
	}
	if files := tempFilesOf(pid); len(files) > 0 {
		t.Errorf("zcprof %v: temp files left: %v", args, files)
	}
}

// tempFilesOf lists the temp files (payload files) named after pid.
func tempFilesOf(pid int) []string {
	files, _ := filepath.Glob(filepath.Join(os.TempDir(), "zcprof-"+strconv.Itoa(pid)+"-*"))
	return files
}

// loadedPrograms lists the ids of every BPF program loaded now.
func loadedPrograms() map[ebpf.ProgramID]bool {
	ids := map[ebpf.ProgramID]bool{}
	for id := ebpf.ProgramID(0); ; {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			return ids
		}
		ids[next], id = true, next
	}
}

// leftPrograms lists programs loaded since before that no process holds:
// once zcprof has exited, its own are freed (bpf.WaitGone gives the kernel
// its moment); the other tests' and users' are held by their processes.
func leftPrograms(before map[ebpf.ProgramID]bool) []ebpf.ProgramID {
	var fresh []uint32
	for id := range loadedPrograms() {
		if !before[id] {
			fresh = append(fresh, uint32(id))
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	bpf.WaitGone(fresh)
	held := heldPrograms()
	var left []ebpf.ProgramID
	for _, id := range fresh {
		if p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id)); err == nil {
			p.Close()
			if !held[id] {
				left = append(left, ebpf.ProgramID(id))
			}
		}
	}
	return left
}

// heldPrograms: the program ids some process holds, directly or through
// a link (fdinfo's prog_id).
func heldPrograms() map[uint32]bool {
	held := map[uint32]bool{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		dir := filepath.Join("/proc", p.Name(), "fdinfo")
		fds, _ := os.ReadDir(dir)
		for _, fd := range fds {
			f, err := os.Open(filepath.Join(dir, fd.Name()))
			if err != nil {
				continue
			}
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "prog_id:"); ok {
					if id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
						held[uint32(id)] = true
					}
				}
			}
			f.Close()
		}
	}
	return held
}
