package attrib

import (
	"fmt"

	"github.com/zcprof/zcprof/profiler/kernel"
)

// MaxHz bounds --sample-hz (the kernel's perf_event_max_sample_rate may
// bound it lower, checked at start).
const MaxHz = 100000

// Validate checks the options without attaching anything (--backend,
// --sample-hz); the error is one line. The CLI and the agent of a
// two-host run both use it.
func (o Options) Validate() error {
	if err := kernel.Choose("--backend", "", o.Backend, kernel.AttributionChoices()); err != nil {
		return err
	}
	if o.SampleHz < 0 || o.SampleHz > MaxHz {
		return fmt.Errorf("--sample-hz %d: must be between 1 and %d (or auto)", o.SampleHz, MaxHz)
	}
	return nil
}
