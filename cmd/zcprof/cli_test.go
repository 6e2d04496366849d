package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zcprof/zcprof/profiler/testenv"
)

// oneLine: a non-zero exit with exactly one line on stderr containing want.
func oneLine(t *testing.T, args []string, r result, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code == 0 || len(lines) != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("zcprof %v: exit %d, stderr %q; want one line containing %q", args, r.code, r.stderr, want)
	}
}

// An output file that cannot be written fails before anything is
// measured (well before -d), and a failed run leaves no file it created
// and an existing file unchanged.
func TestOutputFilesCheckedBeforeMeasuring(t *testing.T) {
	requireBPF(t)
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.json")
	if err := os.WriteFile(existing, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	created := filepath.Join(dir, "new.html")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"profile", "-a", "-d", "30s", "--html", "/nonexistent/dir/x.html"}, "--html: open /nonexistent/dir/x.html: no such file or directory"},
		{[]string{"profile", "-a", "-d", "30s", "--pprof", dir}, "--pprof: open " + dir + ": is a directory"},
		{[]string{"profile", "-a", "-d", "30s", "-o", "/nonexistent/out"}, "--output: open /nonexistent/out"},
		{[]string{"run", "--duration", "30s", "-q", "--folded", "/nonexistent/f"}, "--folded: open /nonexistent/f"},
		{[]string{"profile", "-a", "-d", "30s", "--html", created, "--pprof", created}, "both write " + created},
		// Fails after the files are open: nothing created is left, the
		// existing file is as it was.
		{[]string{"profile", "--pid", "999999999", "--html", created, "-o", existing}, "process 999999999 does not exist"},
	} {
		start := time.Now()
		r := run(t, exec.Command(zcprofBin, c.args...))
		oneLine(t, c.args, r, c.want)
		if el := time.Since(start); el > 10*time.Second {
			t.Errorf("zcprof %v took %v: it measured before failing", c.args, el)
		}
	}
	if _, err := os.Stat(created); !os.IsNotExist(err) {
		t.Errorf("%s left behind by a failed run (%v)", created, err)
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Errorf("a failed run changed %s: %q", existing, b)
	}
}

// Writing a file fails after the run (/dev/full): the table still prints,
// the error is one line, the exit is non-zero. profile -a said when it
// started measuring, so that line comes first.
func TestOutputWriteFailureKeepsTheTable(t *testing.T) {
	requireBPF(t)
	for _, c := range []struct {
		args    []string
		started string
		table   string
	}{
		{[]string{"profile", "-a", "-d", "300ms", "--html", "/dev/full"},
			"zcprof: profiling every task; stopping after 300ms or on Ctrl-C\n", "zcprof profile"},
		{[]string{"run", "--method", "write", "--bytes", "4M", "-q", "--html", "/dev/full"}, "", "zcprof run"},
	} {
		r := run(t, exec.Command(zcprofBin, c.args...))
		if !strings.HasPrefix(r.stderr, c.started) {
			t.Errorf("zcprof %v: stderr %q does not begin with %q", c.args, r.stderr, c.started)
		}
		r.stderr = strings.TrimPrefix(r.stderr, c.started)
		oneLine(t, c.args, r, "--html: write /dev/full: no space left on device")
		if !strings.HasPrefix(r.stdout, c.table) {
			t.Errorf("zcprof %v: no table on stdout:\n%s", c.args, r.stdout)
		}
	}
}

// -o FILE takes the document; the spawned command keeps stdout. Without
// -o, --json on stdout stays parseable: the command's stdout goes to
// stderr.
func TestOutputKeepsCommandStdoutApart(t *testing.T) {
	requireBPF(t)
	doc := filepath.Join(t.TempDir(), "doc.json")
	r := run(t, exec.Command(zcprofBin, "profile", "--json", "-o", doc, "--", "sh", "-c", "echo child-output"))
	if r.code != 0 || r.stdout != "child-output\n" {
		t.Fatalf("with -o: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if d := decode(t, string(b)); d.Command != "profile" {
		t.Errorf("-o document: command %q", d.Command)
	}
	r = run(t, exec.Command(zcprofBin, "profile", "--json", "--", "sh", "-c", "echo child-output"))
	if r.code != 0 || !strings.Contains(r.stderr, "child-output") {
		t.Fatalf("without -o: exit %d, stderr %q", r.code, r.stderr)
	}
	decode(t, r.stdout)

	r = run(t, exec.Command(zcprofBin, "run", "--method", "write", "--bytes", "4M", "-q", "--json", "-o", doc))
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("run -o: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	b, _ = os.ReadFile(doc)
	if d := decode(t, string(b)); d.Command != "run" || len(d.Cells) != 1 {
		t.Errorf("run -o document: command %q, %d cells", d.Command, len(d.Cells))
	}
}

// --metrics :0 prints the address the kernel picked, and it serves there.
func TestMetricsEphemeralPortIsPrinted(t *testing.T) {
	requireBPF(t)
	for _, addr := range []string{":0", ":"} {
		cmd := exec.Command(zcprofBin, "profile", "-a", "-d", "3s", "--metrics", addr, "-o", os.DevNull)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(stderr).ReadString('\n')
		url, ok := strings.CutPrefix(strings.TrimSpace(line), "zcprof: serving metrics on ")
		if !ok {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("--metrics %s: stderr %q", addr, line)
		}
		var body []byte
		resp, err := http.Get(url)
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		io.Copy(io.Discard, stderr)
		if werr := cmd.Wait(); werr != nil {
			t.Errorf("--metrics %s: %v", addr, werr)
		}
		if err != nil || !strings.Contains(string(body), "zcprof_bpf_seconds_total") {
			t.Errorf("--metrics %s: GET %s: %v\n%s", addr, url, err, body)
		}
	}
}

// run takes --byte-classes with profile's values and meaning.
func TestRunByteClassesFlag(t *testing.T) {
	requireBPF(t)
	r := run(t, exec.Command(zcprofBin, "run", "--method", "write", "--bytes", "4M", "-q", "--json", "--byte-classes", "off"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	d := decode(t, r.stdout)
	if d.Backends.ByteClasses != "" || !strings.HasPrefix(d.Backends.Unavailable["byte classes"], "turned off") {
		t.Errorf("--byte-classes off: byte_classes %q, unavailable %q", d.Backends.ByteClasses, d.Backends.Unavailable["byte classes"])
	}
	r = run(t, exec.Command(zcprofBin, "run", "--method", "write", "--bytes", "4M", "-q", "--json", "--byte-classes", "syscall_return"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if d := decode(t, r.stdout); d.Backends.ByteClasses != "syscall_return" {
		t.Errorf("--byte-classes syscall_return: byte_classes %q", d.Backends.ByteClasses)
	}
}

// On a fresh machine zcprof mounts tracefs and says so once: in the first
// interval's table, not in every interval's, nor again in the whole run's.
func TestMountedNoteSaidOnce(t *testing.T) {
	if !testenv.InFreshMounts(t) {
		return
	}
	r := run(t, exec.Command(zcprofBin, "profile", "--interval", "300ms", "--", "sleep", "1.2"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	tables, notes := strings.Count(r.stdout, "zcprof profile "), 0
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "note: ") && strings.Contains(l, "tracefs") {
			notes++
		}
	}
	if tables < 3 || notes != 1 {
		t.Errorf("%d tables, %d notes that tracefs was mounted, want 3 or more and 1:\n%s", tables, notes, r.stdout)
	}
}
