package kernel

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

func TestDescribe(t *testing.T) {
	// The error as cilium/ebpf v0.22 returns it for fentry on the dev kernels.
	fentryEPERM := fmt.Errorf("program doctor_fentry: load program: %w (MEMLOCK may be too low, consider rlimit.RemoveMemlock)", unix.EPERM)
	noKprobes := map[string]string{"CONFIG_KPROBES": "n", "CONFIG_FPROBE": "n", "CONFIG_FUNCTION_TRACER": "y"}
	root := Env{Privileged: true, Config: noKprobes}

	for _, tc := range []struct {
		name       string
		e          Env
		kind, step string
		err        error
		want       []string
		notWant    []string
	}{
		{
			name: "fentry EPERM is the locked function tracer, not memlock", e: root,
			kind: "fentry", step: "load", err: fentryEPERM,
			want:    []string{"fentry: load failed: operation not permitted", "function tracing is locked down", "not RLIMIT_MEMLOCK"},
			notWant: []string{"consider rlimit.RemoveMemlock"},
		},
		{
			name: "EPERM without privileges names the capabilities", e: Env{Config: noKprobes},
			kind: "fentry", step: "load", err: fentryEPERM,
			want: []string{"CAP_BPF and CAP_PERFMON"},
		},
		{
			name: "fentry EBUSY on asm copy routines", e: root,
			kind: "fentry", step: "attach", err: fmt.Errorf("create tracing link: %w", unix.EBUSY),
			want: []string{"device or resource busy", "trampoline"},
		},
		{
			name: "kprobes not built", e: root,
			kind: "kprobe", step: "attach", err: fmt.Errorf("kprobe: %w", unix.ENOENT),
			want: []string{"no such file or directory", "without CONFIG_KPROBES"},
		},
		{
			name: "kprobe.multi without fprobe", e: root,
			kind: "kprobe-multi", step: "attach", err: fmt.Errorf("bpf_link_create: %w", ebpf.ErrNotSupported),
			want: []string{"not supported by this kernel", "without CONFIG_FPROBE"},
		},
		{
			name: "ENOTSUPP has a name", e: root,
			kind: "fentry", step: "attach", err: errENOTSUPP,
			want: []string{"ENOTSUPP"},
		},
		{
			name: "perf_event refused by paranoid", e: Env{Privileged: true, Paranoid: "4"},
			kind: "perf_event", step: "perf_event_open", err: unix.EACCES,
			want: []string{"perf_event_paranoid=4"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.e.Describe(tc.kind, tc.step, tc.err)
			if strings.Contains(got, "\n") {
				t.Errorf("describe returned several lines: %q", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("describe = %q, want it to contain %q", got, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(got, w) {
					t.Errorf("describe = %q, must not contain %q", got, w)
				}
			}
		})
	}
}
