package exact

import (
	"errors"
	"testing"

	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/kernel"
)

// Under auto, a rung doctor's probe refused fails at once with doctor's
// reason, without loading anything (no session is even needed).
func TestStarterAutoFollowsProbe(t *testing.T) {
	sel := kernel.Selection{Backend: "sampling", Unavailable: map[string]string{"fentry": whyFentry,
		"kprobe": "kprobe: attach failed: no such file or directory (kernel built without CONFIG_KPROBES)"}}
	probe := func() (kernel.Selection, error) { return sel, nil }
	for _, mode := range []string{kernel.Fentry, kernel.Kprobe} {
		for _, requested := range []string{"auto", ""} {
			b, err := starter(mode, probe)(nil, attrib.Options{Backend: requested})
			if b != nil || err == nil || err.Error() != sel.Unavailable[mode]+" (doctor's probe)" {
				t.Errorf("%s under %q: %v, %v", mode, requested, b, err)
			}
		}
	}
}

func TestRefusedByProbe(t *testing.T) {
	ok := func() (kernel.Selection, error) { return kernel.Selection{Backend: "fentry"}, nil }
	broken := func() (kernel.Selection, error) { return kernel.Selection{}, errors.New("read probe programs: boom") }
	kprobeOnly := func() (kernel.Selection, error) {
		return kernel.Selection{Backend: "kprobe", Unavailable: map[string]string{"fentry": whyFentry}}, nil
	}
	for _, c := range []struct {
		mode  string
		probe Prober
		want  string
	}{
		{kernel.Fentry, ok, ""},
		{kernel.Kprobe, ok, ""}, // not probed when fentry works: attaching tells
		{kernel.Fentry, broken, ""},
		{kernel.Fentry, kprobeOnly, whyFentry},
		{kernel.Kprobe, kprobeOnly, ""},
	} {
		if got := refusedByProbe(c.mode, c.probe); got != c.want {
			t.Errorf("%s: %q, want %q", c.mode, got, c.want)
		}
	}
}
