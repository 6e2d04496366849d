package bpf

import (
	"fmt"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// PreallocBudget is the most memory a map's values may take preallocated
// (entries x value size, x possible CPUs for a per-CPU map): 131,072
// entries of the accounting's stats fit up to 21 possible CPUs.
const PreallocBudget = 64 << 20

// Preallocate clears BPF_F_NO_PREALLOC on m where its values fit
// PreallocBudget, and says whether it did. A map allocated at insert takes
// its elements from the BPF allocator's per-CPU caches, which refill
// asynchronously (from a thread on PREEMPT_RT), so a burst of inserts is
// refused with the map far from full (docs/known-issues.md). Preallocated,
// an insert fails only when the map is full; the memory is taken up front,
// and creating the map takes longer (136 ms instead of 2 ms for the stats
// map on our machines).
func Preallocate(m *ebpf.MapSpec) (bool, error) {
	cpus := 1
	if m.Type == ebpf.PerCPUHash || m.Type == ebpf.LRUCPUHash {
		n, err := ebpf.PossibleCPU()
		if err != nil {
			return false, fmt.Errorf("count possible CPUs: %w", err)
		}
		cpus = n
	}
	if uint64(m.MaxEntries)*uint64(cpus)*uint64(m.ValueSize) > PreallocBudget {
		return false, nil
	}
	m.Flags &^= unix.BPF_F_NO_PREALLOC
	return true, nil
}
