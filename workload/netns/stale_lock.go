package netns

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/lockfile"
)

// StaleLockPath serialises the hunt for leftovers between zcprof processes.
// Two runs starting together would otherwise both see the same dead run's
// namespace and the slower `ip netns del` would fail; and a test that plants
// a dead pid's namespace must not have another process remove it before it
// looks. It lives in /run/lock, the conventional home of lock files that a
// reboot clears; it is not removed after use (unlinking a flock file races
// with the next locker, which would then lock an orphaned inode).
const StaleLockPath = "/run/lock/zcprof-stale.lock"

// LockStale takes the cross-process lock that CleanupStale expects to be
// held, waiting for another holder, and returns its release.
func LockStale() (unlock func(), err error) {
	fd, err := lockfile.Lock(StaleLockPath, unix.LOCK_EX)
	if err != nil {
		return nil, fmt.Errorf("stale-cleanup lock: %w", err)
	}
	// Closing the descriptor drops the flock.
	return func() { unix.Close(fd) }, nil
}
