package exact

import (
	"fmt"
	"sort"
	"strings"

	"github.com/zcprof/zcprof/profiler/attrib"
)

var _ attrib.Warner = (*Backend)(nil)

// Warnings implements attrib.Warner: calls between the readings that the
// function figures are missing, or have only in part. Nothing is said
// when nothing was lost: the figures are then exact.
func (b *Backend) Warnings(prev, cur attrib.Reading) []string {
	fx, ok := between(prev, cur)
	if !ok {
		return nil
	}
	return lossWarnings(b.tracer.Mode(), fx)
}

// lossWarnings words a delta's Missed and Lost counts.
func lossWarnings(mode string, fx *Snapshot) []string {
	var out []string
	if len(fx.Missed) > 0 {
		ids := make([]int, 0, len(fx.Missed))
		for id := range fx.Missed {
			ids = append(ids, int(id))
		}
		sort.Ints(ids)
		var parts []string
		for _, id := range ids {
			name := fmt.Sprintf("function %d", id)
			if f, ok := ByID(uint8(id)); ok {
				name = f.Name
			}
			parts = append(parts, fmt.Sprintf("%d for %s", fx.Missed[uint8(id)], name))
		}
		// Entry and exit count separately: one call can be two misses.
		out = append(out, fmt.Sprintf("function-exact (%s): the kernel skipped probe or program runs: %s (a probe hit inside another "+
			"probe's handler, kretprobe instances used up, or the BPF recursion guard); the calls they belong to are missing "+
			"from the function figures, or only partly in them", mode, strings.Join(parts, ", ")))
	}
	l := fx.Lost
	var lost []string
	for _, c := range []struct {
		n    uint64
		what string
	}{
		{l.NoFrame, "exits without their entry"},
		{l.Unwound, "entries whose exit never came"},
		{l.Overflow, "calls nested deeper than the frame stack"},
		{l.Dropped, "updates lost to full maps"},
	} {
		if c.n > 0 {
			lost = append(lost, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(lost) > 0 {
		out = append(out, fmt.Sprintf("function-exact (%s): calls not measured: %s", mode, strings.Join(lost, ", ")))
	}
	return out
}
