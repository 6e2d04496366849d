package exact

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/zcprof/zcprof/bpf"
)

// The object declares the accounting's maps itself: their value layouts
// must be the accounting's, field by field (map replacement only checks
// sizes). A stale funcexact object fails here, not in the kernel.
func TestSharedLayouts(t *testing.T) {
	for _, pair := range [][2]any{
		{bpf.FuncexactZcCpu{}, bpf.AccountingZcCpu{}},
		{bpf.FuncexactZcThread{}, bpf.AccountingZcThread{}},
	} {
		a, b := reflect.TypeOf(pair[0]), reflect.TypeOf(pair[1])
		if diff := layoutDiff(a, b, a.String()); diff != "" {
			t.Errorf("%s vs %s: %s: run make generate", a, b, diff)
		}
	}
	acc, err := bpf.LoadAccounting()
	if err != nil {
		t.Fatal(err)
	}
	fx, err := bpf.LoadFuncexact()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sharedMaps {
		a, b := fx.Maps[name], acc.Maps[name]
		if a == nil || b == nil || a.Type != b.Type || a.KeySize != b.KeySize || a.ValueSize != b.ValueSize ||
			a.MaxEntries != b.MaxEntries || a.Flags != b.Flags {
			t.Errorf("map %s: funcexact %+v vs accounting %+v", name, a, b)
		}
	}
}

// Every function has its four programs, aimed at it, and its id matches
// the C enum.
func TestObjectMatchesTable(t *testing.T) {
	spec, err := bpf.LoadFuncexact()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Functions {
		for prefix, section := range map[string]string{"fe_": "fentry/", "fx_": "fexit/", "kp_": "kprobe/", "kr_": "kretprobe/"} {
			p := spec.Programs[prefix+f.Short]
			if p == nil {
				t.Errorf("%s: no program %s%s", f.Name, prefix, f.Short)
				continue
			}
			if p.SectionName != section+f.Name {
				t.Errorf("%s%s: section %q, want %q", prefix, f.Short, p.SectionName, section+f.Name)
			}
		}
	}
	var enum *btf.Enum
	if err := spec.Types.TypeByName("zc_fx_func", &enum); err != nil {
		t.Fatal(err)
	}
	values := map[string]uint64{}
	for _, v := range enum.Values {
		values[v.Name] = v.Value
	}
	for _, f := range Functions {
		name := "FX_" + strings.ToUpper(strings.TrimPrefix(f.Name, "_"))
		if v, ok := values[name]; !ok || v != uint64(f.ID) {
			t.Errorf("%s: enum %s = %d (present %v), table id %d", f.Name, name, v, ok, f.ID)
		}
	}
	for _, p := range clockPoints {
		for _, prefix := range []string{"fxb_", "fxr_"} {
			if spec.Programs[prefix+p.suffix] == nil {
				t.Errorf("no clock program %s%s", prefix, p.suffix)
			}
		}
	}
}

// Doctor's reasons on the 6.18 development machines.
const whyFentry = "fentry: load failed: operation not permitted (function tracing is locked down on this kernel; not RLIMIT_MEMLOCK, whatever cilium/ebpf's hint says)"

func TestSummarize(t *testing.T) {
	same := map[string]string{}
	for _, f := range Functions {
		same[f.Name] = whyFentry
	}
	got := summarize("fentry", same)
	want := "fentry: all 16 functions refused: load failed: operation not permitted (function tracing is locked down on this kernel; not RLIMIT_MEMLOCK, whatever cilium/ebpf's hint says)"
	if got != want {
		t.Errorf("summarize = %q\nwant       %q", got, want)
	}
	mixed := map[string]string{
		"splice_to_socket":   "not in /proc/kallsyms (inlined or absent on this build)",
		"tcp_sendmsg_locked": "kprobe: attach failed: invalid argument",
		"_copy_from_iter":    "kprobe: attach failed: no such file or directory (symbol not found or blacklisted for kprobes)",
	}
	got = summarize("kprobe", mixed)
	// The kernel's refusal, not the missing symbol, leads; one line.
	if got != "kprobe: no function attached; _copy_from_iter: attach failed: no such file or directory (symbol not found or blacklisted for kprobes) (and 2 more, each with its reason)" {
		t.Errorf("summarize mixed = %q", got)
	}
}

// layoutDiff says where two generated types differ in layout (bpf2go names
// a nested type in one object and leaves it anonymous in another): field
// names, offsets, sizes and kinds, recursively; "" when they agree.
func layoutDiff(a, b reflect.Type, at string) string {
	if a.Kind() != b.Kind() || a.Size() != b.Size() {
		return fmt.Sprintf("%s: %s (%d bytes) vs %s (%d bytes)", at, a, a.Size(), b, b.Size())
	}
	switch a.Kind() {
	case reflect.Array:
		if a.Len() != b.Len() {
			return fmt.Sprintf("%s: %d vs %d elements", at, a.Len(), b.Len())
		}
		return layoutDiff(a.Elem(), b.Elem(), at+"[]")
	case reflect.Struct:
		if a.NumField() != b.NumField() {
			return fmt.Sprintf("%s: %d vs %d fields", at, a.NumField(), b.NumField())
		}
		for i := 0; i < a.NumField(); i++ {
			fa, fb := a.Field(i), b.Field(i)
			if fa.Name != fb.Name || fa.Offset != fb.Offset {
				return fmt.Sprintf("%s: %s at +%d vs %s at +%d", at, fa.Name, fa.Offset, fb.Name, fb.Offset)
			}
			if d := layoutDiff(fa.Type, fb.Type, at+"."+fa.Name); d != "" {
				return d
			}
		}
	}
	return ""
}
