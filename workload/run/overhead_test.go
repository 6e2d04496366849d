package run

import (
	"testing"

	"github.com/zcprof/zcprof/profiler/report"
)

// TestMergedOverheadKeepsOneScope: the run's overhead is its cells' sides'
// probe time over the same sides' CPU, over every repeat, and keeps the
// dispatch estimate the per-run documents carry.
func TestMergedOverheadKeepsOneScope(t *testing.T) {
	side := func(onCPU, probe, runs uint64) report.Process {
		return report.Process{CPU: report.CPU{OnCPUNS: onCPU, ProbeNS: probe, ProbeEvents: runs}}
	}
	doc := func(probe, runs uint64) *report.Document {
		return &report.Document{Precision: &report.Precision{}, Backends: report.Backends{Unavailable: map[string]string{}},
			Overhead: report.Overhead{BPFNS: probe, Events: runs, DispatchNS: 40, Misses: 1}}
	}
	var a docAcc
	a.add(sample{doc: doc(30, 3)})
	a.add(sample{doc: doc(10, 1)})
	// The cell holds the means of its two repeats.
	a.doc.Cells = []report.Cell{{Repeats: 2, Sender: side(600, 15, 1), Receiver: side(180, 5, 1)}}
	o := a.finish().Overhead
	if o.BPFNS != 40 || o.Events != 4 || o.DispatchNS != 40 || o.Misses != 2 {
		t.Fatalf("overhead %+v, want 40 ns over 4 runs, dispatch 40, 2 misses", o)
	}
	if want := 40.0 / 1600; o.Share != want {
		t.Errorf("share %v, want %v (probe over on-CPU + probe of the same sides)", o.Share, want)
	}
}
