package attrib

import (
	"fmt"

	"github.com/zcprof/zcprof/profiler/kernel"
)

// Validate checks the options without attaching anything (--backend,
// --sample-hz); the error is one line. The CLI and the agent of a
// two-host run both use it.
func (o Options) Validate() error {
	if err := kernel.Choose("--backend", "", o.Backend, kernel.AttributionChoices()); err != nil {
		return err
	}
	if o.SampleHz < 1 || o.SampleHz > 100000 {
		return fmt.Errorf("--sample-hz %d: must be between 1 and 100000", o.SampleHz)
	}
	return nil
}
