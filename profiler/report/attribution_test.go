package report

import "testing"

func TestAttributionWhy(t *testing.T) {
	fentry := "fentry: load failed: operation not permitted (function tracing is locked down on this kernel)"
	kprobe := "kprobe: attach failed: no such file or directory (kernel built without CONFIG_KPROBES)"
	for _, c := range []struct {
		b    Backends
		want string
	}{
		{Backends{Attribution: "sampling", Unavailable: map[string]string{"fentry": fentry, "kprobe": kprobe, "pmu": "no PMU"}},
			"sampling because " + fentry + "; " + kprobe},
		{Backends{Attribution: "kprobe", Unavailable: map[string]string{"fentry": fentry}}, "kprobe because " + fentry},
		// The best rung: nothing to explain (a refused function is not a rung).
		{Backends{Attribution: "fentry", Unavailable: map[string]string{"function/_copy_from_iter": "EBUSY"}}, ""},
		// Reasons recorded without the kind's prefix get it.
		{Backends{Attribution: "sampling", Unavailable: map[string]string{"fentry": "not probed"}}, "sampling because fentry: not probed"},
	} {
		if got := AttributionWhy(c.b); got != c.want {
			t.Errorf("AttributionWhy(%+v) = %q, want %q", c.b, got, c.want)
		}
	}
}
