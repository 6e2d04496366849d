package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/zcprof/zcprof/profiler/report/html/htmltest"
)

// TestRunHTML: the HTML report of the default `zcprof run` matrix (short
// transfers) draws every chart in headless Chromium without script errors;
// so does the HTML of a comparison.
func TestRunHTML(t *testing.T) {
	requireBPF(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "run.html")
	r := run(t, exec.Command(zcprofBin, "run", "--bytes", "16M", "-q", "--html", page))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	htmltest.Check(t, page, 5)

	j := runJSON(t, dir, "write.json", "--method", "write", "--bytes", "8M")
	cmpPage := filepath.Join(dir, "compare.html")
	if c := run(t, exec.Command(zcprofBin, "compare", "--html", cmpPage, j, j)); c.code != 0 {
		t.Fatalf("compare --html: exit %d: %s", c.code, c.stderr)
	}
	htmltest.Check(t, cmpPage, 1)
}
