package workload

import (
	"errors"
	"os"

	"github.com/zcprof/zcprof/workload/netns"
)

// CleanupStale removes network namespaces and temp files left behind by
// earlier runs whose process is dead (both encode the owner pid in their
// names) and returns what it removed.
func CleanupStale() ([]string, error) {
	removed, err := netns.CleanupStale()
	errs := []error{err}
	for _, f := range staleTempFiles(netns.Alive) {
		if err := os.Remove(f); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, f)
	}
	return removed, errors.Join(errs...)
}
