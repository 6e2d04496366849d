package doctor

import (
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	all := []string{AttachTpBTF, AttachRawTp, AttachFentry, AttachKprobe, AttachKprobeMulti, AttachPerfEvent}
	for _, tc := range []struct {
		name                    string
		ok                      []string
		accounting, attribution string
		instead                 map[string]string // kind -> substring of its instead text
	}{
		{
			name:       "dev machine 6.18: no fentry, no kprobes",
			ok:         []string{AttachTpBTF, AttachRawTp, AttachPerfEvent},
			accounting: BackendTpBTF, attribution: BackendSampling,
			instead: map[string]string{
				AttachFentry:      "falls back to perf_event sampling",
				AttachKprobe:      "falls back to perf_event sampling",
				AttachKprobeMulti: "no kprobes",
			},
		},
		{
			name:       "distro 6.12: everything",
			ok:         all,
			accounting: BackendTpBTF, attribution: BackendFentry,
			instead: map[string]string{AttachKprobe: "not needed: attribution uses fentry"},
		},
		{
			name:       "fentry refused, kprobes work",
			ok:         []string{AttachTpBTF, AttachRawTp, AttachKprobe, AttachPerfEvent},
			accounting: BackendTpBTF, attribution: BackendKprobe,
			instead: map[string]string{
				AttachFentry:      "uses kprobe/kretprobe",
				AttachKprobeMulti: "one function at a time",
			},
		},
		{
			name:       "no BTF: raw_tp only",
			ok:         []string{AttachRawTp, AttachPerfEvent},
			accounting: BackendRawTp, attribution: BackendSampling,
			instead: map[string]string{AttachTpBTF: "accounting uses raw_tp"},
		},
		{
			name:       "no perf events either",
			ok:         []string{AttachTpBTF, AttachRawTp},
			accounting: BackendTpBTF, attribution: BackendNone,
			instead: map[string]string{
				AttachFentry:    "exact context totals only",
				AttachPerfEvent: "exact context totals only",
			},
		},
		{
			name:       "nothing works",
			accounting: BackendNone, attribution: BackendNone,
			instead: map[string]string{AttachTpBTF: "cannot profile", AttachRawTp: "cannot profile"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok := map[string]bool{}
			for _, k := range tc.ok {
				ok[k] = true
			}
			d := decide(ok)
			if d.accounting != tc.accounting || d.attribution != tc.attribution {
				t.Errorf("decide = %s/%s, want %s/%s", d.accounting, d.attribution, tc.accounting, tc.attribution)
			}
			for kind, sub := range tc.instead {
				if !strings.Contains(d.instead[kind], sub) {
					t.Errorf("instead[%s] = %q, want it to mention %q", kind, d.instead[kind], sub)
				}
			}
			for _, kind := range all {
				if d.instead[kind] == "" {
					t.Errorf("no instead text for %s: a downgrade must never be silent", kind)
				}
			}
		})
	}
}

func TestApply(t *testing.T) {
	r := Report{Checks: []Check{
		{Name: AttachTpBTF, Kind: KindAttach, Status: StatusOK},
		{Name: AttachFentry, Kind: KindAttach, Status: StatusUnavailable, Detail: "fentry: load failed: operation not permitted"},
		{Name: "tcp_sendmsg_locked", Kind: KindTracepoint, Status: StatusUnavailable, Detail: "not in this kernel"},
		{Name: "_copy_to_iter", Kind: KindFunction, Status: StatusDegraded},
	}}
	decide(passed(r.Checks)).apply(&r)
	if r.Accounting != BackendTpBTF || r.Attribution != BackendNone {
		t.Errorf("backends = %s/%s", r.Accounting, r.Attribution)
	}
	if r.Unavailable[AttachFentry] != "fentry: load failed: operation not permitted" {
		t.Errorf("Unavailable[fentry] = %q", r.Unavailable[AttachFentry])
	}
	if _, ok := r.Unavailable["tracepoint/tcp_sendmsg_locked"]; !ok {
		t.Error("a missing tracepoint must be listed in Unavailable")
	}
	if _, ok := r.Unavailable[AttachTpBTF]; ok {
		t.Error("tp_btf worked but is listed as unavailable")
	}
	if r.Checks[1].Instead == "" {
		t.Error("fentry check got no instead text")
	}
}
