package bpf

import (
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// A map is preallocated up to the budget inclusive, counting a per-CPU
// map's values once per possible CPU, and left as it was past it.
func TestPreallocateWithinBudget(t *testing.T) {
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	const valueSize = 16
	perCPUFit := uint32(PreallocBudget / (cpus * valueSize))
	for _, c := range []struct {
		name    string
		typ     ebpf.MapType
		entries uint32
		want    bool
	}{
		{"per-CPU at the budget", ebpf.PerCPUHash, perCPUFit, true},
		{"per-CPU one entry past it", ebpf.PerCPUHash, perCPUFit + 1, false},
		{"shared at the budget", ebpf.Hash, PreallocBudget / valueSize, true},
		{"shared one entry past it", ebpf.Hash, PreallocBudget/valueSize + 1, false},
	} {
		m := &ebpf.MapSpec{Type: c.typ, MaxEntries: c.entries, ValueSize: valueSize, Flags: unix.BPF_F_NO_PREALLOC | unix.BPF_F_RDONLY}
		got, err := Preallocate(m)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want || (m.Flags&unix.BPF_F_NO_PREALLOC == 0) != c.want || m.Flags&unix.BPF_F_RDONLY == 0 {
			t.Errorf("%s (%d entries, %d CPUs): preallocated %v, flags %#x; want %v, other flags kept", c.name, c.entries, cpus, got, m.Flags, c.want)
		}
	}
}
