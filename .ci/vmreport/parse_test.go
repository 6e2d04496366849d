package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sampleLog = "@@VMTEST BEGIN kernel=6.1.0-57-amd64 cpus=2 mem_kb=2019144\r\n" +
	"ZCPROF_EXPECT_KERNEL=6.1\r\n" +
	"@@VMTEST DOCTOR BEGIN\r\n{\"kernel\": \"6.1.0-57-amd64\", \"accounting\": \"tp_btf\", \"attribution\": \"fentry\"}\r\n" +
	"@@VMTEST DOCTOR END rc=0 seconds=19\r\n" +
	"@@VMTEST PKG BEGIN profiler\r\n" +
	"=== RUN   TestA\r\n--- PASS: TestA (0.01s)\r\n" +
	"=== RUN   TestB\r\n=== RUN   TestB/x\r\n    b_test.go:1: boom\r\n" +
	"    --- FAIL: TestB/x (1.50s)\r\n        b_test.go:2: want 1, got 2\r\n--- FAIL: TestB (1.50s)\r\n" +
	"=== RUN   TestC\r\n    c_test.go:9: no netns here\r\n--- SKIP: TestC (0.00s)\r\n    c_test.go:9: needs veth\r\nFAIL\r\n" +
	"=== RUN   TestE\r\n    e_test.go:3: set X=1 to record\r\n--- SKIP: TestE (0.00s)\r\n" +
	"@@VMTEST PKG END profiler rc=1 seconds=12\r\n" +
	"@@VMTEST PKG BEGIN workload\r\n=== RUN   TestD\r\n"

func TestParseGuestLog(t *testing.T) {
	g, err := parseGuestLog(strings.NewReader(sampleLog))
	if err != nil {
		t.Fatal(err)
	}
	if !g.Begun || g.Ended || g.Kernel != "6.1.0-57-amd64" || g.Env["ZCPROF_EXPECT_KERNEL"] != "6.1" {
		t.Errorf("header: %+v", g)
	}
	if !g.Doctor.Done || g.Doctor.RC != 0 || len(g.Doctor.Lines) != 1 {
		t.Errorf("doctor: %+v", g.Doctor)
	}
	if g.Last != "@@VMTEST PKG BEGIN workload" {
		t.Errorf("last marker %q", g.Last)
	}
	if len(g.Packages) != 2 {
		t.Fatalf("%d packages", len(g.Packages))
	}
	p := g.Packages[0]
	pass, fail, skip := p.count()
	if p.Name != "profiler" || !p.Done || p.RC != 1 || p.Seconds != 12 || pass != 1 || fail != 2 || skip != 2 {
		t.Errorf("profiler: %+v (%d/%d/%d)", p, pass, fail, skip)
	}
	for _, tr := range p.Tests {
		switch tr.Name {
		case "TestB/x":
			if tr.Seconds != 1.5 || strings.Join(tr.Output, "|") != "b_test.go:1: boom|b_test.go:2: want 1, got 2" {
				t.Errorf("TestB/x: %+v", tr)
			}
		case "TestC":
			if strings.Join(tr.Output, "|") != "c_test.go:9: no netns here|c_test.go:9: needs veth" {
				t.Errorf("TestC: %+v", tr)
			}
		case "TestE":
			if strings.Join(tr.Output, "|") != "e_test.go:3: set X=1 to record" {
				t.Errorf("TestE: %+v", tr)
			}
		}
	}
	if w := g.Packages[1]; w.Done || w.Name != "workload" {
		t.Errorf("unfinished package: %+v", w)
	}
}

// TestCheck: a guest that died in a package, after a kernel oops, fails
// with both reasons; a clean one passes.
func TestCheck(t *testing.T) {
	write := func(dir string, files map[string]string) {
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	bad := filepath.Join(t.TempDir(), "6.1")
	os.Mkdir(bad, 0o755)
	write(bad, map[string]string{"tests.log": sampleLog, "qemu.rc": "0", "seconds": "30", "package": "p 1",
		"console.log": "[ 46.5] Oops: int3: 0000 [#1] PREEMPT SMP NOPTI\n"})
	err := check(bad)
	if err == nil {
		t.Fatal("check passed a failed run")
	}
	var s summary
	if !readJSON(filepath.Join(bad, "summary.json"), &s) || s.OK {
		t.Fatalf("summary: %+v", s)
	}
	want := []string{"kernel console: [ 46.5] Oops", "output stops after", "profiler: exit 1, 2 failed", "workload: the guest stopped"}
	for _, w := range want {
		found := false
		for _, p := range s.Problems {
			found = found || strings.Contains(p, w)
		}
		if !found {
			t.Errorf("no problem %q in %q", w, s.Problems)
		}
	}

	good := filepath.Join(t.TempDir(), "6.12")
	os.Mkdir(good, 0o755)
	log := "@@VMTEST BEGIN kernel=6.12.117+deb12-amd64\nZCPROF_EXPECT_KERNEL=6.12\n" +
		"@@VMTEST PKG BEGIN doctor\n--- PASS: TestA (0.01s)\nPASS\n@@VMTEST PKG END doctor rc=0 seconds=1\n" +
		"@@VMTEST DMESG BEGIN\n[ 1.0] veth: loaded\n@@VMTEST DMESG END\n@@VMTEST END\n"
	write(good, map[string]string{"tests.log": log, "qemu.rc": "0", "seconds": "30", "package": "p 1", "console.log": ""})
	if err := check(good); err != nil {
		t.Errorf("clean run: %v", err)
	}

	timeout := filepath.Join(t.TempDir(), "6.12")
	os.Mkdir(timeout, 0o755)
	write(timeout, map[string]string{"tests.log": "", "qemu.rc": "124", "seconds": "900", "package": "p 1", "console.log": "booting"})
	if err := check(timeout); err == nil {
		t.Error("a timeout passed")
	}
	if !readJSON(filepath.Join(timeout, "summary.json"), &s) || len(s.Problems) < 2 || !strings.Contains(s.Problems[0], "timeout") {
		t.Errorf("timeout problems: %q", s.Problems)
	}
}

func TestUpdateReadme(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	os.WriteFile(path, []byte("# x\n\nintro\n"), 0o644)
	if err := updateReadme(path, "table 1\n"); err != nil {
		t.Fatal(err)
	}
	if err := updateReadme(path, "table 2\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := "# x\n\nintro\n\n## Tested kernels\n\n" + beginMarker + "\ntable 2\n" + endMarker + "\n"
	if string(b) != want {
		t.Errorf("README:\n%s\nwant:\n%s", b, want)
	}
}

func TestVersionOrder(t *testing.T) {
	want := []string{"6.1", "6.12", "6.12-rt", "6.18"}
	for i := range want {
		for j := range want {
			if got := versionLess(want[i], want[j]); got != (i < j) {
				t.Errorf("versionLess(%s, %s) = %v", want[i], want[j], got)
			}
		}
	}
}

func TestUnrunSuiteTests(t *testing.T) {
	pkgs := []pkgRun{
		{Name: "profiler", Tests: []testResult{{Name: "TestA", Status: "PASS"}, {Name: "TestA/sub", Status: "PASS"}}},
		{Name: "doctor", Tests: []testResult{{Name: "TestB", Status: "SKIP"}}},
	}
	if got := unrunSuiteTests("^(TestA|TestB|TestGone)$", pkgs); len(got) != 1 || got[0] != "TestGone" {
		t.Errorf("unrun = %v, want [TestGone]", got)
	}
	if got := unrunSuiteTests("^(TestA|TestB)$", pkgs); len(got) != 0 {
		t.Errorf("unrun = %v, want none", got)
	}
	if got := unrunSuiteTests("", pkgs); got != nil { // every test: nothing named
		t.Errorf("unrun of no suite = %v", got)
	}
}
