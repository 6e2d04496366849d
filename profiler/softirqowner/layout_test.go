package softirqowner

import (
	"reflect"
	"testing"

	"github.com/zcprof/zcprof/bpf"
)

// TestCPUStateLayout: this object reads the accounting's per-CPU state
// through its own copy of struct zc_cpu (bpf/accounting.h). If the
// accounting changed the struct and this object was not regenerated, the
// generated Go types differ: run `make generate`.
func TestCPUStateLayout(t *testing.T) {
	a, o := reflect.TypeOf(bpf.AccountingZcCpu{}), reflect.TypeOf(bpf.SoftirqOwnerZcCpu{})
	if a.Size() != o.Size() || a.NumField() != o.NumField() {
		t.Fatalf("struct zc_cpu: accounting %d bytes/%d fields, softirq owner %d bytes/%d fields: regenerate bpf/softirq_owner (make generate)",
			a.Size(), a.NumField(), o.Size(), o.NumField())
	}
	for i := range a.NumField() {
		fa, fo := a.Field(i), o.Field(i)
		if fa.Name != fo.Name || fa.Offset != fo.Offset || fa.Type.Size() != fo.Type.Size() {
			t.Errorf("struct zc_cpu field %d: accounting %s@%d, softirq owner %s@%d: regenerate bpf/softirq_owner", i, fa.Name, fa.Offset, fo.Name, fo.Offset)
		}
	}
}
