package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/zcprof/zcprof/profiler/doctor"
	"github.com/zcprof/zcprof/profiler/report"
)

// summary is what `check` keeps of one kernel's run (summary.json), for
// the docs.
type summary struct {
	Series   string            `json:"series"`
	Package  string            `json:"package"` // Debian package and version
	Kernel   string            `json:"kernel"`
	Commit   string            `json:"commit"`
	Date     string            `json:"date"`
	Seconds  int               `json:"seconds"`
	OK       bool              `json:"ok"`
	Problems []string          `json:"problems,omitempty"`
	Packages []pkgSummary      `json:"packages"`
	Env      map[string]string `json:"env"`
	// Suite is the guest's -test.run regexp when it ran a subset (the
	// PREEMPT_RT suite): the docs say so.
	Suite string `json:"suite,omitempty"`
}

type pkgSummary struct {
	Name    string       `json:"name"`
	Done    bool         `json:"done"` // false: the guest stopped while it ran
	RC      int          `json:"rc"`
	Seconds int          `json:"seconds"`
	Passed  int          `json:"passed"`
	Failed  int          `json:"failed"`
	Skipped []testResult `json:"skipped,omitempty"`
	// FailedTests names the failed tests, subtests included.
	FailedTests []string `json:"failed_tests,omitempty"`
}

// Kernel messages that mean the kernel itself went wrong. A WARN splat is
// one too: our programs must not trigger any.
var kernelTrouble = regexp.MustCompile(`Kernel panic|BUG:|Oops|general protection fault|WARNING: CPU:|Call Trace:|RIP: `)

// check reads a results directory written by .ci/vmtest (tests.log,
// console.log, qemu.rc, seconds, package), prints the verdict, writes
// summary.json, doctor.json and profile.json, and fails on any test
// failure, kernel panic or warning, timeout or missing output.
func check(dir string) error {
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return strings.TrimSpace(string(b))
	}
	s := summary{Series: filepath.Base(dir), Package: read("package"), Commit: read("commit"),
		Date: time.Now().UTC().Format("2006-01-02"), Seconds: atoi(read("seconds")), Env: map[string]string{},
		Suite: read("suite")}
	if fi, err := os.Stat(filepath.Join(dir, "tests.log")); err == nil {
		s.Date = fi.ModTime().UTC().Format("2006-01-02") // when the guest ran, not this check
	}
	problem := func(format string, a ...any) { s.Problems = append(s.Problems, fmt.Sprintf(format, a...)) }

	switch rc := read("qemu.rc"); rc {
	case "0":
	case "124", "137":
		problem("timeout: the guest ran for %d s without finishing (VMTEST_TIMEOUT)", s.Seconds)
	default:
		problem("qemu exited with %s: %s", rc, lastLines(read("qemu.log"), 5))
	}
	console := read("console.log")
	for _, l := range strings.Split(console, "\n") {
		if kernelTrouble.MatchString(l) {
			problem("kernel console: %s", strings.TrimSpace(l))
			break
		}
	}

	f, err := os.Open(filepath.Join(dir, "tests.log"))
	if err != nil {
		return err
	}
	g, err := parseGuestLog(f)
	f.Close()
	if err != nil {
		return err
	}
	s.Kernel, s.Env = g.Kernel, g.Env
	switch {
	case !g.Begun:
		problem("no output from the guest (did it boot? see %s): %s", filepath.Join(dir, "console.log"), lastLines(console, 8))
	case !g.Ended:
		problem("output stops after %q", g.Last)
	}
	if want := g.Env["ZCPROF_EXPECT_KERNEL"]; g.Begun && !strings.HasPrefix(g.Kernel, want+".") {
		problem("guest runs %s, expected %s", g.Kernel, want)
	}

	if g.Doctor.Seen {
		var r doctor.Report
		if err := decodeJSON(g.Doctor.Lines, &r); err != nil {
			problem("zcprof doctor --json: %v", err)
		} else if err := writeJSON(filepath.Join(dir, "doctor.json"), r); err != nil {
			return err
		}
		if g.Doctor.RC != 0 {
			problem("zcprof doctor exited with %d: %s", g.Doctor.RC, lastLines(strings.Join(g.Doctor.Lines, "\n"), 3))
		}
	}
	if g.Profile.Seen {
		var d report.Document
		if err := decodeJSON(g.Profile.Lines, &d); err != nil {
			problem("zcprof profile --json: %v", err)
		} else if err := writeJSON(filepath.Join(dir, "profile.json"), d); err != nil {
			return err
		}
		if g.Profile.RC != 0 {
			problem("zcprof profile exited with %d: %s", g.Profile.RC, lastLines(strings.Join(g.Profile.Lines, "\n"), 3))
		}
	}
	for _, l := range g.Dmesg.Lines {
		if kernelTrouble.MatchString(l) {
			problem("dmesg: %s", strings.TrimSpace(l))
			break
		}
	}

	if g.Begun && len(g.Packages) == 0 {
		problem("no test package ran")
	}
	for _, p := range g.Packages {
		pass, fail, _ := p.count()
		ps := pkgSummary{Name: p.Name, Done: p.Done, RC: p.RC, Seconds: p.Seconds, Passed: pass, Failed: fail}
		for _, t := range p.Tests {
			switch t.Status {
			case "SKIP":
				ps.Skipped = append(ps.Skipped, t)
			case "FAIL":
				ps.FailedTests = append(ps.FailedTests, t.Name)
			}
		}
		s.Packages = append(s.Packages, ps)
		switch {
		case !p.Done:
			problem("%s: the guest stopped while it ran (last lines: %s)", p.Name, lastLines(strings.Join(p.Lines, "\n"), 5))
		case p.RC != 0 || fail > 0:
			problem("%s: exit %d, %d failed", p.Name, p.RC, fail)
		}
	}
	if g.Ended {
		for _, name := range unrunSuiteTests(s.Suite, g.Packages) {
			problem("%s is in the suite but no package ran it (renamed?)", name)
		}
	}
	s.OK = len(s.Problems) == 0
	if err := writeJSON(filepath.Join(dir, "summary.json"), s); err != nil {
		return err
	}
	printVerdict(s, g)
	if !s.OK {
		return fmt.Errorf("%s: %d problem(s)", s.Series, len(s.Problems))
	}
	return nil
}

// printVerdict: one line per package, then what every failed test
// printed, the end of each failed package's output, and the problems.
func printVerdict(s summary, g *guestLog) {
	fmt.Printf("== %s: %s, kernel %s, %d s\n", s.Series, s.Package, s.Kernel, s.Seconds)
	for _, p := range s.Packages {
		if !p.Done {
			fmt.Printf("   %-28s DID NOT FINISH  %3d passed  %d failed  %d skipped before it stopped\n", p.Name, p.Passed, p.Failed, len(p.Skipped))
			continue
		}
		fmt.Printf("   %-28s rc=%d  %3d passed  %d failed  %d skipped  %4d s\n", p.Name, p.RC, p.Passed, p.Failed, len(p.Skipped), p.Seconds)
		for _, t := range p.Skipped {
			fmt.Printf("      skip %s: %s\n", t.Name, strings.Join(t.Output, " "))
		}
	}
	for _, p := range g.Packages {
		if _, fail, _ := p.count(); p.RC == 0 && p.Done && fail == 0 {
			continue
		}
		// Each failed test's own lines first: a package's last lines
		// are mostly the tests that ran after it, and CI shows only the
		// head and tail of this output.
		for _, t := range p.Tests {
			if t.Status == "FAIL" && len(t.Output) > 0 {
				fmt.Printf("---- %s.%s failed:\n%s\n", p.Name, t.Name, lastLines(strings.Join(t.Output, "\n"), 40))
			}
		}
		fmt.Printf("---- output of %s (last 40 lines)\n%s\n", p.Name, lastLines(strings.Join(p.Lines, "\n"), 40))
	}
	printSlowest(g, 8)
	for _, pr := range s.Problems {
		fmt.Printf("   PROBLEM: %s\n", pr)
	}
	if s.OK {
		fmt.Printf("   ok\n")
	}
}

func decodeJSON(lines []string, v any) error {
	text := strings.Join(lines, "\n")
	start := strings.IndexByte(text, '{')
	if start < 0 {
		return fmt.Errorf("no JSON in %q", lastLines(text, 3))
	}
	return json.NewDecoder(strings.NewReader(text[start:])).Decode(v)
}

func writeJSON(path string, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// printSlowest lists the top-level tests that took longest: the budget
// (about 15 minutes for the matrix) is spent there.
func printSlowest(g *guestLog, n int) {
	type timed struct {
		name string
		secs float64
	}
	var all []timed
	for _, p := range g.Packages {
		for _, t := range p.Tests {
			if !strings.Contains(t.Name, "/") {
				all = append(all, timed{p.Name + "." + t.Name, t.Seconds})
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].secs > all[j].secs })
	if len(all) > n {
		all = all[:n]
	}
	var parts []string
	for _, t := range all {
		parts = append(parts, fmt.Sprintf("%s %.0fs", t.name, t.secs))
	}
	if len(parts) > 0 {
		fmt.Printf("   slowest: %s\n", strings.Join(parts, ", "))
	}
}

// suiteListRE is a suite that names its tests: ^(TestA|TestB)$.
var suiteListRE = regexp.MustCompile(`^\^\(((?:Test\w+\|)*Test\w+)\)\$$`)

// unrunSuiteTests: the tests a suite names that no package ran, so that a
// renamed test cannot drop out of a subset silently.
func unrunSuiteTests(suite string, pkgs []pkgRun) []string {
	m := suiteListRE.FindStringSubmatch(suite)
	if m == nil {
		return nil
	}
	ran := map[string]bool{}
	for _, p := range pkgs {
		for _, t := range p.Tests {
			ran[t.Name] = true
		}
	}
	var missing []string
	for _, name := range strings.Split(m[1], "|") {
		if !ran[name] {
			missing = append(missing, name)
		}
	}
	return missing
}
