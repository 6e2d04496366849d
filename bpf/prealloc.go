package bpf

import (
	"fmt"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// PreallocBudget is the most kernel memory a hash map may take
// preallocated (PreallocBytes): 131,072 entries of the accounting's stats
// fit up to 18 possible CPUs.
const PreallocBudget = 64 << 20

// What a hash map element costs beside its key and value: struct
// htab_elem's header, and a 16-byte bucket per entry (the kernel rounds the
// bucket count up to a power of two; the accounting's maps are sized so).
// bpftool's memlock for a 65,536-entry map of 520-byte keys and 8-byte
// values is 38,799,376 bytes: 592 a entry, 48 + 520 + 8 + 16.
const (
	htabElemHeader = 48
	htabBucket     = 16
)

// PreallocBytes is the memory m takes preallocated: each element's header,
// key and value (a per-CPU map keeps a pointer in the element and a value
// per possible CPU), and its bucket.
func PreallocBytes(m *ebpf.MapSpec) (uint64, error) {
	value := uint64(round8(m.ValueSize))
	if m.Type == ebpf.PerCPUHash || m.Type == ebpf.LRUCPUHash {
		n, err := ebpf.PossibleCPU()
		if err != nil {
			return 0, fmt.Errorf("count possible CPUs: %w", err)
		}
		value = 8 + value*uint64(n)
	}
	return uint64(m.MaxEntries) * (htabElemHeader + uint64(round8(m.KeySize)) + value + htabBucket), nil
}

// Preallocate clears BPF_F_NO_PREALLOC on m where it fits PreallocBudget,
// and says whether it did. A map allocated at insert takes its elements
// from the BPF allocator's per-CPU caches, which refill asynchronously
// (from a thread on PREEMPT_RT), so a burst of inserts is refused with the
// map far from full (docs/known-issues.md). Preallocated, an insert fails
// only when the map is full; the memory is taken up front, and creating the
// map takes longer (136 ms instead of 2 ms for the stats map on our
// machines).
func Preallocate(m *ebpf.MapSpec) (bool, error) {
	size, err := PreallocBytes(m)
	if err != nil {
		return false, err
	}
	if size > PreallocBudget {
		return false, nil
	}
	m.Flags &^= unix.BPF_F_NO_PREALLOC
	return true, nil
}

func round8(n uint32) uint32 { return (n + 7) &^ 7 }
