package doctor

import (
	"github.com/zcprof/zcprof/profiler/pseudofs"
)

// checkPseudoFS makes tracefs and securityfs available the way profile and
// run do (mounting them when root may and the machine has not) and reports
// each with what depends on it. Call release when doctor is done; it
// unmounts what was mounted here.
func checkPseudoFS() (checks []Check, release func()) {
	var holds []*pseudofs.Hold
	for _, fs := range []pseudofs.FS{pseudofs.Tracefs, pseudofs.Securityfs} {
		c := Check{Name: fs.Type, Kind: KindPseudoFS, Status: StatusOK, Detail: "mounted at " + fs.Dir + "; needed for " + fs.Needed}
		h, err := pseudofs.Acquire(fs)
		switch {
		case err != nil:
			c.Status, c.Detail = StatusUnavailable, err.Error()
			c.Instead = "lost: " + fs.Needed
		case h.Mounted:
			c.Detail = "not mounted by the machine: zcprof mounts it at " + fs.Dir + " while it runs (as now) and unmounts it after; needed for " + fs.Needed
		}
		holds = append(holds, h)
		checks = append(checks, c)
	}
	// zcprof reads tracepoint ids from tracefs, never from debugfs.
	checks = append(checks, Check{Name: "debugfs", Kind: KindPseudoFS, Status: StatusOK, Detail: "not needed (tracepoint ids come from tracefs)"})
	return checks, func() {
		for _, h := range holds {
			h.Release()
		}
	}
}
