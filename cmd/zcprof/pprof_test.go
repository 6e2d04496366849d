package main

import (
	"bufio"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/zcprof/zcprof/profiler/attrib"
)

// copyRoutines are the user-copy routines of x86 kernels: the sender's
// copy shows as one of them depending on the kernel and CPU, or as the
// sampler's [rep_movs] frame where the copy is an inline rep movsb (FSRM).
var copyRoutines = []string{"_copy_from_iter", "rep_movs_alternative", "copy_user_enhanced_fast_string",
	"copy_user_generic_unrolled", "copy_user_generic_string", "__copy_user_nocache", attrib.FrameRepMovs}

// TestPprofOfAWriteRun: the --pprof file of a write run opens in
// `go tool pprof -top`, lists the copy routine among its top entries, and
// its total is the exact on-CPU time of the sampled threads (and without
// user mode, their exact kernel time) within 1%. --folded carries the same
// total.
func TestPprofOfAWriteRun(t *testing.T) {
	requireBPF(t)
	dir := t.TempDir()
	pp, folded := filepath.Join(dir, "write.pb.gz"), filepath.Join(dir, "write.folded")
	r := run(t, exec.Command(zcprofBin, "run", "--method", "write", "--bytes", "128M", "--cpus", "0:1",
		"--sample-hz", "4999", "--json", "-q", "--pprof", pp, "--folded", folded))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	d := decode(t, r.stdout)
	c := d.Cells[0]
	// The threads' time: the workload's own and zcprof's handlers in it
	// (their own stack, [zcprof handlers]).
	onCPU := float64(c.Sender.CPU.RanNS() + c.Receiver.CPU.RanNS())
	kernel := onCPU - float64(c.Sender.CPU.UserNS+c.Receiver.CPU.UserNS)

	f, err := os.Open(pp)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var total, kern, copyNS float64
	for _, s := range p.Sample {
		total += float64(s.Value[1])
		if s.Label["path"][0] != "user" {
			kern += float64(s.Value[1])
		}
		if s.Label["side"][0] == "sender" && s.Label["category"][0] == "copy.tx" {
			copyNS += float64(s.Value[1])
		}
	}
	within := func(name string, got, want float64) {
		if math.Abs(got-want) > 0.01*want {
			t.Errorf("%s: pprof %.0f ns, exact %.0f ns (%.2f%% off)", name, got, want, 100*(got-want)/want)
		}
	}
	within("on-CPU", total, onCPU)
	within("kernel", kern, kernel)
	t.Logf("pprof total %.1f ms = exact on-CPU %.1f ms; kernel %.1f ms; sender copy.tx %.1f ms", total/1e6, onCPU/1e6, kern/1e6, copyNS/1e6)

	var foldedTotal float64
	ff, err := os.Open(folded)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(ff)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		i := strings.LastIndexByte(sc.Text(), ' ')
		v, err := strconv.ParseFloat(sc.Text()[i+1:], 64)
		if err != nil || strings.Count(sc.Text()[:i], " ") != 0 {
			t.Fatalf("bad folded line %q", sc.Text())
		}
		foldedTotal += v
	}
	ff.Close()
	within("folded", foldedTotal, onCPU)

	top := run(t, exec.Command("go", "tool", "pprof", "-top", pp))
	if top.code != 0 {
		t.Fatalf("go tool pprof -top: exit %d: %s", top.code, top.stderr)
	}
	// The entries after the header: "flat flat% sum% cum cum% name".
	var names []string
	for _, line := range strings.Split(top.stdout, "\n") {
		fs := strings.Fields(line)
		if len(fs) == 6 && strings.HasSuffix(fs[1], "%") && fs[0] != "flat" {
			names = append(names, fs[5])
		}
	}
	if len(names) > 10 {
		names = names[:10]
	}
	found := false
	for _, n := range names {
		for _, c := range copyRoutines {
			found = found || n == c
		}
	}
	if !found {
		t.Errorf("no copy routine among the top 10 entries %v:\n%s", names, top.stdout)
	}
	t.Logf("top 10: %v", names)
}
