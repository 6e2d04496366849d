package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// The guest (.ci/vmtest-init) writes its results on ttyS1 as sections
// between "@@VMTEST <NAME> BEGIN ..." and "@@VMTEST <NAME> END ...". The
// serial line turns "\n" into "\r\n": carriage returns are dropped.

// guestLog is one parsed tests.log.
type guestLog struct {
	Begun, Ended bool
	Kernel       string            // uname -r in the guest
	Env          map[string]string // the ZCPROF_* environment of the tests
	Doctor       section
	Profile      section
	Packages     []pkgRun
	Dmesg        section
	Last         string // the last marker seen, for "output stops after"
}

type section struct {
	Seen, Done bool
	RC         int
	Lines      []string
}

// pkgRun is one test binary's run.
type pkgRun struct {
	Name    string
	Done    bool // an END marker was seen (else the guest died inside it)
	RC      int
	Seconds int
	Lines   []string
	Tests   []testResult
}

type testResult struct {
	Name    string
	Status  string // PASS, FAIL, SKIP
	Seconds float64
	Output  []string // the indented lines after the result (skip reasons, failures)
}

var (
	markerRE = regexp.MustCompile(`^@@VMTEST (\w+)(?: (BEGIN|END))?(.*)$`)
	kvRE     = regexp.MustCompile(`(\w+)=(\S+)`)
	resultRE = regexp.MustCompile(`^(\s*)--- (PASS|FAIL|SKIP): (\S+) \(([\d.]+)s\)`)
	runRE    = regexp.MustCompile(`^=== (?:RUN|CONT|PAUSE|NAME)\s+(\S+)`)
)

func kv(s string) map[string]string {
	m := map[string]string{}
	for _, g := range kvRE.FindAllStringSubmatch(s, -1) {
		m[g[1]] = g[2]
	}
	return m
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func parseGuestLog(r io.Reader) (*guestLog, error) {
	g := &guestLog{Env: map[string]string{}}
	var cur *[]string // where plain lines go
	var pkg *pkgRun
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		m := markerRE.FindStringSubmatch(line)
		if m == nil {
			switch {
			case cur != nil:
				*cur = append(*cur, line)
			case g.Begun && strings.HasPrefix(line, "ZCPROF_"):
				if k, v, ok := strings.Cut(line, "="); ok {
					g.Env[k] = v
				}
			}
			continue
		}
		g.Last = strings.TrimSpace(line)
		name, edge, rest := m[1], m[2], strings.TrimSpace(m[3])
		args := kv(rest)
		switch {
		case name == "BEGIN" && edge == "":
			g.Begun, g.Kernel = true, args["kernel"]
		case name == "END" && edge == "":
			g.Ended = true
			cur = nil
		case name == "DOCTOR" || name == "PROFILE" || name == "DMESG":
			s := map[string]*section{"DOCTOR": &g.Doctor, "PROFILE": &g.Profile, "DMESG": &g.Dmesg}[name]
			if edge == "BEGIN" {
				s.Seen = true
				cur = &s.Lines
			} else {
				s.Done, cur = true, nil
				if v, ok := args["rc"]; ok {
					s.RC = atoi(v)
				}
			}
		case name == "PKG" && edge == "BEGIN":
			g.Packages = append(g.Packages, pkgRun{Name: strings.Fields(rest + " ?")[0]})
			pkg = &g.Packages[len(g.Packages)-1]
			cur = &pkg.Lines
		case name == "PKG" && edge == "END":
			if pkg == nil {
				return nil, fmt.Errorf("PKG END without BEGIN: %s", line)
			}
			pkg.Done, pkg.RC, pkg.Seconds = true, atoi(args["rc"]), atoi(args["seconds"])
			pkg.Tests = parseTests(pkg.Lines)
			pkg, cur = nil, nil
		}
	}
	if pkg != nil { // the guest died inside a package: keep what it printed
		pkg.Tests = parseTests(pkg.Lines)
	}
	return g, sc.Err()
}

// parseTests reads `go test -v` output: "--- STATUS: Name (1.23s)" lines,
// subtests indented. A test's log lines (skip reasons, failures) are the
// indented lines printed while it ran ("=== RUN/CONT Name" up to its
// result), or right after its result when the output was held back.
func parseTests(lines []string) []testResult {
	var out []testResult
	logs := map[string][]string{}
	current := ""
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := runRE.FindStringSubmatch(l); m != nil {
			current = m[1]
			continue
		}
		m := resultRE.FindStringSubmatch(l)
		if m == nil {
			if current != "" && strings.HasPrefix(l, "    ") {
				logs[current] = append(logs[current], strings.TrimSpace(l))
			}
			continue
		}
		secs, _ := strconv.ParseFloat(m[4], 64)
		t := testResult{Name: m[3], Status: m[2], Seconds: secs, Output: logs[m[3]]}
		delete(logs, m[3]) // -test.count runs a name again
		indent := len(m[1])
		for j := i + 1; j < len(lines); j++ {
			next := lines[j]
			if resultRE.MatchString(next) || runRE.MatchString(next) || len(next)-len(strings.TrimLeft(next, " \t")) <= indent {
				break
			}
			t.Output = append(t.Output, strings.TrimSpace(next))
			i = j
		}
		current = ""
		out = append(out, t)
	}
	return out
}

// count returns how many tests (subtests included) have each status.
func (p pkgRun) count() (pass, fail, skip int) {
	for _, t := range p.Tests {
		switch t.Status {
		case "PASS":
			pass++
		case "FAIL":
			fail++
		case "SKIP":
			skip++
		}
	}
	return
}
