package doctor

import (
	"slices"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/testenv"
)

// assertExpected checks a Run report against what `make vmtest` says the
// guest kernel gives (ZCPROF_EXPECT_*, docs/vmtest.md). Without any
// expectation set (a native `make test`) it only logs.
func assertExpected(t *testing.T, r Report) {
	t.Helper()
	series, ok := testenv.Expect("KERNEL")
	if !ok {
		t.Logf("no ZCPROF_EXPECT_KERNEL: per-kernel facts not asserted")
		return
	}
	if rel := kernel.Release(); !strings.HasPrefix(rel, series+".") {
		t.Fatalf("running %s, expected a %s kernel", rel, series)
	}
	if want, ok := testenv.Expect("PREEMPT_RT"); ok && r.PreemptRT != (want == "1") {
		t.Errorf("preempt_rt = %v, want %s", r.PreemptRT, want)
	}
	if want, ok := testenv.Expect("ACCOUNTING"); ok && r.Accounting != want {
		t.Errorf("auto accounting = %s, want %s", r.Accounting, want)
	}
	if want, ok := testenv.Expect("ATTRIBUTION"); ok && r.Attribution != want {
		t.Errorf("auto attribution = %s, want %s (unavailable: %v)", r.Attribution, want, r.Unavailable)
	}

	check := func(kind, name string) (Check, bool) {
		t.Helper()
		c, ok := r.Check(kind, name)
		if !ok {
			t.Errorf("no %s check %q in the report", kind, name)
		}
		return c, ok
	}
	// A refusal must come with the kernel's reason and what zcprof does
	// instead: a stated degradation, never a silent one.
	stated := func(c Check) bool { return c.Detail != "" && c.Instead != "" }

	list := func(name string) []string { l, _ := testenv.ExpectList(name); return l }
	for _, kind := range list("ATTACH_OK") {
		if c, ok := check(KindAttach, kind); ok && c.Status != StatusOK {
			t.Errorf("attach %s: %s (%s), want ok", kind, c.Status, c.Detail)
		}
	}
	for _, kind := range list("ATTACH_UNAVAILABLE") {
		if c, ok := check(KindAttach, kind); ok && (c.Status != StatusUnavailable || !stated(c) || r.Unavailable[kind] == "") {
			t.Errorf("attach %s: %s (%s; instead %q), want unavailable with a reason", kind, c.Status, c.Detail, c.Instead)
		}
	}

	// Tracepoints: the listed ones are missing from this kernel, with the
	// version that added them; every other one works.
	missing := list("TRACEPOINTS_MISSING")
	for _, tp := range tracepoints {
		c, ok := check(KindTracepoint, tp.name)
		if !ok {
			continue
		}
		if slices.Contains(missing, tp.name) {
			if c.Status != StatusUnavailable || !strings.Contains(c.Detail, "not in this kernel") || !stated(c) ||
				r.Unavailable["tracepoint/"+tp.name] == "" {
				t.Errorf("tracepoint %s: %s (%s; instead %q), want missing with a reason", tp.name, c.Status, c.Detail, c.Instead)
			}
		} else if c.Status != StatusOK {
			t.Errorf("tracepoint %s: %s (%s), want ok on %s", tp.name, c.Status, c.Detail, series)
		}
	}

	// Key functions: attachable callers, functions this
	// build lacks, and the copy routines the kernel refuses.
	via := "attached (" + r.Attribution + ")"
	for _, fn := range list("FUNCTIONS_OK") {
		if c, ok := check(KindFunction, fn); ok && (c.Status != StatusOK || c.Detail != via) {
			t.Errorf("function %s: %s (%s), want %s", fn, c.Status, c.Detail, via)
		}
	}
	for _, fn := range list("FUNCTIONS_MISSING") {
		if c, ok := check(KindFunction, fn); ok && (c.Status != StatusUnavailable || !strings.Contains(c.Detail, "not in /proc/kallsyms") || !stated(c)) {
			t.Errorf("function %s: %s (%s), want absent from kallsyms", fn, c.Status, c.Detail)
		}
	}
	for _, fn := range list("FUNCTIONS_REFUSED") {
		c, ok := check(KindFunction, fn)
		if ok && (c.Status == StatusOK || strings.Contains(c.Detail, "not in /proc/kallsyms") || !stated(c)) {
			t.Errorf("function %s: %s (%s; instead %q), want present but refused, with the kernel's reason", fn, c.Status, c.Detail, c.Instead)
		}
		if ok {
			t.Logf("%s refused: %s", fn, c.Detail)
		}
	}
	for _, fn := range KeyFunctions() {
		if !testenv.Expected("FUNCTIONS_OK", fn) && !testenv.Expected("FUNCTIONS_MISSING", fn) && !testenv.Expected("FUNCTIONS_REFUSED", fn) {
			c, _ := r.Check(KindFunction, fn)
			t.Logf("function %s has no expectation for %s (.ci/vmtest): %s (%s)", fn, series, c.Status, c.Detail)
		}
	}
}
