package byteclass

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// Counters are the byte-class counters (zcb_stats). The accounting owns
// them and counts into them itself what a syscall shows, with or without
// the byte-class programs (a MSG_TRUNC receive's discarded bytes; with
// them, TCP_ZEROCOPY_RECEIVE's mapped bytes and rx copies); the programs
// take them over (loadMaps).
type Counters struct {
	stats, drops *ebpf.Map
}

// NewCounters reads the counters of the accounting's maps.
func NewCounters(accounting map[string]*ebpf.Map) (*Counters, error) {
	c := &Counters{stats: accounting["zcb_stats"], drops: accounting["zcb_drops"]}
	if c.stats == nil || c.drops == nil {
		return nil, errors.New("the accounting has no zcb_stats or zcb_drops map")
	}
	return c, nil
}

// Read returns the current counters, summed over CPUs, and the updates the
// maps refused so far.
func (c *Counters) Read() (map[Key]Count, uint64, error) {
	var (
		k      bpf.ZcbytesZcbKey
		perCPU []bpf.ZcbytesZcbVal
	)
	counts := map[Key]Count{}
	it := c.stats.Iterate()
	for it.Next(&k, &perCPU) {
		var n Count
		for _, v := range perCPU {
			n = n.Add(Count{v.Bytes, v.Events})
		}
		counts[Key{k.Gen, taxonomy.Path(k.Path), Class(k.Class)}] = n
	}
	if err := it.Err(); err != nil {
		return nil, 0, fmt.Errorf("read byte classes: %w", err)
	}
	var dropped uint64
	if err := c.drops.Lookup(uint32(0), &dropped); err != nil {
		dropped = 0
	}
	return counts, dropped, nil
}

// Forget deletes a counter whose counts the session keeps elsewhere (an
// exited thread's, folded into its process's retired row).
func (c *Counters) Forget(k Key) {
	_ = c.stats.Delete(bpf.ZcbytesZcbKey{Gen: k.Gen, Path: uint8(k.Path), Class: uint8(k.Class)})
}
