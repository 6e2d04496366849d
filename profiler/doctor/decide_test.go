package doctor

import (
	"testing"

	"github.com/zcprof/zcprof/profiler/kernel"
)

func TestApply(t *testing.T) {
	r := Report{Checks: []Check{
		{Name: kernel.TpBTF, Kind: KindAttach, Status: StatusOK},
		{Name: kernel.Fentry, Kind: KindAttach, Status: StatusUnavailable, Detail: "fentry: load failed: operation not permitted"},
		{Name: "tcp_sendmsg_locked", Kind: KindTracepoint, Status: StatusUnavailable, Detail: "not in this kernel"},
		{Name: "_copy_to_iter", Kind: KindFunction, Status: StatusDegraded},
	}}
	apply(kernel.Decide(passed(r.Checks)), &r)
	if r.Accounting != kernel.TpBTF || r.Attribution != kernel.None {
		t.Errorf("backends = %s/%s", r.Accounting, r.Attribution)
	}
	if r.Unavailable[kernel.Fentry] != "fentry: load failed: operation not permitted" {
		t.Errorf("Unavailable[fentry] = %q", r.Unavailable[kernel.Fentry])
	}
	if _, ok := r.Unavailable["tracepoint/tcp_sendmsg_locked"]; !ok {
		t.Error("a missing tracepoint must be listed in Unavailable")
	}
	if _, ok := r.Unavailable[kernel.TpBTF]; ok {
		t.Error("tp_btf worked but is listed as unavailable")
	}
	if r.Checks[1].Instead == "" {
		t.Error("fentry check got no instead text")
	}
}
