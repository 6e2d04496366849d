package bpf

import (
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/testenv"
)

// A map is preallocated up to the budget inclusive, counting each
// element's header, key and bucket and a per-CPU map's values once per
// possible CPU, and left as it was past it.
func TestPreallocateWithinBudget(t *testing.T) {
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	const keySize, valueSize = 8, 16
	perCPUFit := uint32(PreallocBudget / (48 + keySize + 8 + cpus*valueSize + 16))
	sharedFit := uint32(PreallocBudget / (48 + keySize + valueSize + 16))
	for _, c := range []struct {
		name    string
		typ     ebpf.MapType
		entries uint32
		want    bool
	}{
		{"per-CPU at the budget", ebpf.PerCPUHash, perCPUFit, true},
		{"per-CPU one entry past it", ebpf.PerCPUHash, perCPUFit + 1, false},
		{"shared at the budget", ebpf.Hash, sharedFit, true},
		{"shared one entry past it", ebpf.Hash, sharedFit + 1, false},
	} {
		m := &ebpf.MapSpec{Type: c.typ, MaxEntries: c.entries, KeySize: keySize, ValueSize: valueSize, Flags: unix.BPF_F_NO_PREALLOC | unix.BPF_F_RDONLY}
		got, err := Preallocate(m)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want || (m.Flags&unix.BPF_F_NO_PREALLOC == 0) != c.want || m.Flags&unix.BPF_F_RDONLY == 0 {
			t.Errorf("%s (%d entries, %d CPUs): preallocated %v, flags %#x; want %v, other flags kept", c.name, c.entries, cpus, got, m.Flags, c.want)
		}
	}
}

// PreallocBytes agrees with what the kernel charges a preallocated map
// (its memlock, as bpftool shows it), for a map of long keys like the
// sampler's stacks and one of short keys like its leaves.
func TestPreallocBytesIsTheKernels(t *testing.T) {
	testenv.RequireBPF(t)
	if !testenv.KernelAtLeast(t, 6, 4) {
		// Before 6.4 a map's memlock is only its keys and values rounded
		// up to a page, not what it takes (map_mem_usage came in 6.4).
		t.Skip("the kernel's memlock is the size of keys and values before 6.4, not the map's footprint")
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []*ebpf.MapSpec{
		{Name: "stacks", Type: ebpf.Hash, KeySize: 520, ValueSize: 8, MaxEntries: 4096},
		{Name: "leaves", Type: ebpf.Hash, KeySize: 16, ValueSize: 8, MaxEntries: 4096},
	} {
		want, err := PreallocBytes(spec)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ebpf.NewMap(spec)
		if err != nil {
			t.Fatal(err)
		}
		info, err := m.Info()
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
		got, ok := info.Memlock()
		if !ok {
			t.Fatalf("%s: the kernel gave no memlock", spec.Name)
		}
		// Beside the elements the kernel takes a spare one per possible
		// CPU (for updates that replace an element) and the map's own
		// struct, under 4 KiB.
		spares := uint64(cpus) * uint64(48+spec.KeySize+spec.ValueSize)
		t.Logf("%s: %d bytes by PreallocBytes, %d spare, the kernel charges %d", spec.Name, want, spares, got)
		if got < want+spares || got > want+spares+4096 {
			t.Errorf("%s: %d bytes by PreallocBytes and %d spare, the kernel charges %d", spec.Name, want, spares, got)
		}
	}
}
