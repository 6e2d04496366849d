package doctor

import (
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/zcprof/zcprof/bpf"
)

// TestTracepointsAreTheProgramsOwn: doctor checks exactly the tracepoints
// zcprof's programs attach to, each the way they attach (classic ones by
// group), read from the BPF objects themselves. The send syscalls' classic
// tracepoints are sock_send_length's stand-in before 6.3, said in its row.
func TestTracepointsAreTheProgramsOwn(t *testing.T) {
	loads := map[string]func() (*ebpf.CollectionSpec, error){
		"accounting": bpf.LoadAccounting, "zcbytes": bpf.LoadZcbytes, "softirq_owner": bpf.LoadSoftirqOwner,
		"funcexact": bpf.LoadFuncexact, "sampler": bpf.LoadSampler, "floor": bpf.LoadFloor,
	}
	used := map[string]string{} // tracepoint -> its classic group ("" for tp_btf/raw_tp)
	for obj, load := range loads {
		spec, err := load()
		if err != nil {
			t.Fatalf("%s: %v", obj, err)
		}
		for name, p := range spec.Programs {
			kind, target, _ := strings.Cut(p.SectionName, "/")
			switch kind {
			case "tp_btf", "raw_tp":
				used[target] = ""
			case "tracepoint":
				group, tp, ok := strings.Cut(target, "/")
				if !ok {
					t.Fatalf("%s: program %s: section %q names no group", obj, name, p.SectionName)
				}
				if group != "syscalls" {
					used[tp] = group
				}
			}
		}
	}
	listed := map[string]bool{}
	for _, tp := range tracepoints {
		found := false
		for _, name := range []string{tp.name, tp.alias} {
			group, ok := used[name]
			if name == "" || !ok {
				continue
			}
			found = true
			listed[name] = true
			if group != tp.group {
				t.Errorf("%s: doctor checks it as group %q, the programs attach it as %q", name, tp.group, group)
			}
		}
		if !found {
			t.Errorf("doctor checks %s, which no program attaches to", tp.name)
		}
		if tp.instead == "" {
			t.Errorf("%s: no word on what zcprof does without it", tp.name)
		}
	}
	var missing []string
	for name := range used {
		if !listed[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("programs attach to tracepoints doctor does not check: %v", missing)
	}
}
