package profiler

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/testenv"
)

// TestOptionalTracepointsDegrade: a tracepoint this kernel lacks (6.1 has
// no sock_send_length, added in 6.3) costs its feature, with the reason in
// Session.Unavailable; the session still opens. A tracepoint it has must
// attach. Which ones exist is read from the kernel's BTF, and checked
// against ZCPROF_EXPECT_TRACEPOINTS_MISSING when make vmtest sets it, as
// is the backend auto picks (ZCPROF_EXPECT_ACCOUNTING).
func TestOptionalTracepointsDegrade(t *testing.T) {
	requireBPF(t)
	kspec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	inKernel := func(tp string) bool {
		var typ *btf.Typedef
		err := kspec.TypeByName("btf_trace_"+tp, &typ)
		if err != nil && !errors.Is(err, btf.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	missing, expectSet := testenv.ExpectList("TRACEPOINTS_MISSING")
	for _, tp := range missing {
		if inKernel(tp) {
			t.Errorf("ZCPROF_EXPECT_TRACEPOINTS_MISSING lists %s, but this kernel has it", tp)
		}
	}
	for _, backend := range []string{"auto", kernel.TpBTF, kernel.RawTp} {
		t.Run(backend, func(t *testing.T) {
			s, err := Open(Options{Target: Target{TIDs: []int{unix.Gettid()}}, Backend: backend})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if want, ok := testenv.Expect("ACCOUNTING"); ok && backend == "auto" && (s.Backend() != want || s.Fallback() != "") {
				t.Errorf("auto accounting = %s (fallback %q), want %s", s.Backend(), s.Fallback(), want)
			}
			ids := s.ProgramIDs()
			unavailable := maps.Clone(s.Unavailable())
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			assertDetached(t, ids)
			for _, p := range optionalPoints {
				reason, lost := unavailable[p.optional]
				switch {
				case inKernel(p.tracepoint) && lost:
					t.Errorf("%s is in this kernel, but %q is unavailable: %s", p.tracepoint, p.optional, reason)
				case !inKernel(p.tracepoint) && (!lost || !strings.Contains(reason, p.tracepoint)):
					t.Errorf("%s is not in this kernel: want %q unavailable with a reason naming it, got %q", p.tracepoint, p.optional, reason)
				case lost:
					t.Logf("degraded as expected: %s: %s", p.optional, reason)
				}
				if expectSet && testenv.Expected("TRACEPOINTS_MISSING", p.tracepoint) != lost {
					t.Errorf("%q unavailable = %v, but ZCPROF_EXPECT_TRACEPOINTS_MISSING=%q", p.optional, lost, strings.Join(missing, ","))
				}
			}
			// The recent tracepoints the session's features use beyond the
			// accounting (byte classes: tcp_sendmsg_locked 6.16+,
			// sock_send_length 6.3+): when missing, some feature says so.
			for _, tp := range []string{"tcp_sendmsg_locked", "sock_send_length"} {
				var named []string
				for k, v := range unavailable {
					if strings.Contains(k, tp) || strings.Contains(v, tp) {
						named = append(named, k+": "+v)
					}
				}
				if !inKernel(tp) && len(named) == 0 {
					t.Errorf("%s is not in this kernel, but no unavailable feature names it: %v", tp, unavailable)
				}
				if inKernel(tp) && len(named) > 0 {
					t.Errorf("%s is in this kernel, but: %q", tp, named)
				}
			}
		})
	}
}
