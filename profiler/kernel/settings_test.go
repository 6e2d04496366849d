package kernel

import "testing"

func TestParseLockdown(t *testing.T) {
	for in, want := range map[string]string{
		"none [integrity] confidentiality\n": "integrity",
		"[none] integrity confidentiality\n": "none",
		"none integrity [confidentiality]":   "confidentiality",
		"":                                   "",
		"none integrity":                     "",
	} {
		if got := parseLockdown(in); got != want {
			t.Errorf("parseLockdown(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string]int{"0": 1, "0-1": 2, "0-3,6": 5, "0,2-3": 3} {
		cpus, err := parseCPUList(in)
		if err != nil || len(cpus) != want {
			t.Errorf("parseCPUList(%q) = %v, %v; want %d CPUs", in, cpus, err, want)
		}
	}
	for _, bad := range []string{"", "x", "3-1"} {
		if _, err := parseCPUList(bad); err == nil {
			t.Errorf("parseCPUList(%q): want an error", bad)
		}
	}
}
