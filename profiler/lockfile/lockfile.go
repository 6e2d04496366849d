// Package lockfile takes flock(2) locks on files that zcprof processes
// share (in /run/lock). The kernel drops a lock when its holder dies, so
// a killed zcprof never leaves one held.
package lockfile

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Lock opens path and takes a flock of kind (unix.LOCK_SH or
// unix.LOCK_EX), waiting for it. Closing the descriptor drops the lock.
// The files are never removed: unlinking a flock file races with the next
// locker, which would then lock an orphaned inode.
func Lock(path string, kind int) (int, error) {
	fd, err := open(path)
	if err != nil {
		return -1, err
	}
	for {
		err = unix.Flock(fd, kind)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("lock %s: %w", path, err)
	}
	return fd, nil
}

// TryLock is Lock without waiting: -1 and no error when someone else holds
// a conflicting lock.
func TryLock(path string, kind int) (int, error) {
	fd, err := open(path)
	if err != nil {
		return -1, err
	}
	if err := unix.Flock(fd, kind|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		if err == unix.EWOULDBLOCK {
			return -1, nil
		}
		return -1, fmt.Errorf("lock %s: %w", path, err)
	}
	return fd, nil
}

func open(path string) (int, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return -1, err
	}
	// Read-only: flock needs no write access, and a file another user
	// created (root's, 0644) must still be lockable.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", path, err)
	}
	return fd, nil
}
