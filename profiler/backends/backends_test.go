package backends

import (
	"reflect"
	"testing"

	"github.com/zcprof/zcprof/profiler/kernel"
)

// Every rung of the ladder has a backend, in the ladder's order: a rung
// missing here would be skipped by auto without a word.
func TestAttributionIsTheLadder(t *testing.T) {
	var names []string
	for _, r := range Attribution() {
		if r.Start == nil {
			t.Errorf("rung %s has no starter", r.Name)
		}
		names = append(names, r.Name)
	}
	if !reflect.DeepEqual(names, kernel.AttributionLadder) {
		t.Errorf("rungs %v, want the ladder %v", names, kernel.AttributionLadder)
	}
}
