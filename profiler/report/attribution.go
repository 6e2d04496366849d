package report

import (
	"fmt"
	"strings"

	"github.com/zcprof/zcprof/profiler/kernel"
)

// AttributionWhy is the one line that says why the attribution backend in
// use was chosen: the kernel's reason for each better rung it skipped
// (from backends.unavailable). "" when nothing better was skipped.
func AttributionWhy(b Backends) string {
	var why []string
	// The rungs of the ladder above the one in use, and above sampling.
	for _, rung := range kernel.AttributionLadder {
		if rung == b.Attribution || rung == kernel.Sampling {
			break
		}
		if r, ok := b.Unavailable[rung]; ok {
			if !strings.HasPrefix(r, rung+":") {
				r = rung + ": " + r
			}
			why = append(why, r)
		}
	}
	if len(why) == 0 {
		return ""
	}
	return b.Attribution + " because " + strings.Join(why, "; ")
}

// functionsCell renders a path's traced functions on one line: exact
// time, calls and bytes, largest first.
func functionsCell(p Path) string {
	parts := make([]string, 0, len(p.Functions))
	for _, f := range p.Functions {
		s := fmt.Sprintf("%s %s in %d calls", f.Function, Millis(f.NS), f.Calls)
		if f.Bytes > 0 {
			s += ", " + MiB(f.Bytes)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
