package workload

import (
	"errors"
	"os"

	"github.com/zcprof/zcprof/workload/netns"
)

// CleanupStale removes network namespaces and temp files left behind by
// earlier runs whose process is dead (both encode the owner pid in their
// names) and returns what it removed. It holds netns.LockStale throughout, so
// concurrent runs do not trip over each other's deletions.
func CleanupStale() ([]string, error) {
	unlock, err := netns.LockStale()
	if err != nil {
		return nil, err
	}
	defer unlock()
	return cleanupStale()
}

// cleanupStale is CleanupStale for a caller that holds netns.LockStale.
func cleanupStale() ([]string, error) {
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
