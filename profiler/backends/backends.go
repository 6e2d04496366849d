// Package backends wires the attribution ladder: every backend zcprof
// has, by name, in `auto`'s order of preference (kernel.AttributionLadder).
// It is the one package that imports both attrib and the function-exact
// backend (profiler/exact, which imports attrib), so that nothing
// registers itself and every importer gets the same ladder by asking.
package backends

import (
	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/exact"
	"github.com/zcprof/zcprof/profiler/kernel"
)

// Attribution returns the attribution rungs in ladder order.
func Attribution() []attrib.Rung {
	byName := map[string]attrib.Rung{}
	for _, r := range append(exact.Rungs(), attrib.SamplingRung()) {
		byName[r.Name] = r
	}
	out := make([]attrib.Rung, 0, len(kernel.AttributionLadder))
	for _, name := range kernel.AttributionLadder {
		if r, ok := byName[name]; ok {
			out = append(out, r)
		}
	}
	return out
}
