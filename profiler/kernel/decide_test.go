package kernel

import (
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	all := []string{TpBTF, RawTp, Fentry, Kprobe, KprobeMulti, PerfEvent}
	for _, tc := range []struct {
		name                    string
		ok                      []string
		accounting, attribution string
		instead                 map[string]string // kind -> substring of its instead text
	}{
		{
			name:       "dev machine 6.18: no fentry, no kprobes",
			ok:         []string{TpBTF, RawTp, PerfEvent},
			accounting: TpBTF, attribution: Sampling,
			instead: map[string]string{
				Fentry:      "falls back to perf_event sampling",
				Kprobe:      "falls back to perf_event sampling",
				KprobeMulti: "no kprobes",
			},
		},
		{
			name:       "distro 6.12: everything",
			ok:         all,
			accounting: TpBTF, attribution: Fentry,
			instead: map[string]string{Kprobe: "not needed: attribution uses fentry"},
		},
		{
			name:       "fentry refused, kprobes work",
			ok:         []string{TpBTF, RawTp, Kprobe, PerfEvent},
			accounting: TpBTF, attribution: Kprobe,
			instead: map[string]string{
				Fentry:      "uses kprobe/kretprobe",
				KprobeMulti: "one function at a time",
			},
		},
		{
			name:       "no BTF: raw_tp only",
			ok:         []string{RawTp, PerfEvent},
			accounting: RawTp, attribution: Sampling,
			instead: map[string]string{TpBTF: "accounting uses raw_tp"},
		},
		{
			name:       "no perf events either",
			ok:         []string{TpBTF, RawTp},
			accounting: TpBTF, attribution: None,
			instead: map[string]string{
				Fentry:    "exact context totals only",
				PerfEvent: "exact context totals only",
			},
		},
		{
			name:       "nothing works",
			accounting: None, attribution: None,
			instead: map[string]string{TpBTF: "cannot profile", RawTp: "cannot profile"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok := map[string]bool{}
			for _, k := range tc.ok {
				ok[k] = true
			}
			d := Decide(ok)
			if d.Accounting != tc.accounting || d.Attribution != tc.attribution {
				t.Errorf("Decide = %s/%s, want %s/%s", d.Accounting, d.Attribution, tc.accounting, tc.attribution)
			}
			for kind, sub := range tc.instead {
				if !strings.Contains(d.Instead[kind], sub) {
					t.Errorf("instead[%s] = %q, want it to mention %q", kind, d.Instead[kind], sub)
				}
			}
			for _, kind := range all {
				if d.Instead[kind] == "" {
					t.Errorf("no instead text for %s: a downgrade must never be silent", kind)
				}
			}
		})
	}
}
