package attrib

import (
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

func TestEarlyWarning(t *testing.T) {
	tx := profiler.Key{Gen: 7, Path: taxonomy.PathTxWrite, Ctx: taxonomy.CtxTask}
	reading := func(leaves, early uint64) *Samples {
		return &Samples{Leaves: map[LeafKey]uint64{{Key: tx, Leaf: "_copy_from_iter"}: leaves},
			Counts: map[StackKey]uint64{}, EarlyLeaves: map[LeafKey]uint64{{Key: tx, Leaf: "pvm_irq_enable"}: early}, UsualLatenessNS: 45_000}
	}
	// Between two readings: 180 leaves and 20 early samples.
	w := EarlyWarning(reading(20, 5), reading(200, 25))
	if !strings.Contains(w, "10% of the targets' samples came early") || !strings.Contains(w, "usual 45 µs") {
		t.Errorf("warning %q", w)
	}
	if w := EarlyWarning(nil, reading(990, 10)); w != "" {
		t.Errorf("1%% early: %q, want no warning", w)
	}
	if w := EarlyWarning(nil, nil); w != "" {
		t.Errorf("no reading: %q", w)
	}
}
