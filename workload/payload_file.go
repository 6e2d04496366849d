package workload

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// tempPrefix starts every temp file name: zcprof-<pid>-*, so CleanupStale
// can find leftovers of dead runs.
const tempPrefix = "zcprof-"

// createPayloadFile writes fileLen pattern bytes to a new temp file,
// unlinks it at once and returns it open, with a path that reopens it
// (/proc/self/fd/N, valid for every thread of this process). The file
// dies with the process however it ends, SIGKILL included. It is fsynced
// so that a later DONTNEED can evict it.
func createPayloadFile() (f *os.File, path string, err error) {
	f, err = os.CreateTemp("", fmt.Sprintf("%s%d-*.payload", tempPrefix, os.Getpid()))
	if err != nil {
		return nil, "", err
	}
	// Only a crash between create and here leaves the name behind
	// (staleTempFiles removes it on the next start).
	err = os.Remove(f.Name())
	if err == nil {
		buf := make([]byte, fileLen)
		fillPattern(buf, 0)
		_, err = f.Write(buf)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, "", fmt.Errorf("payload file: %w", err)
	}
	return f, fmt.Sprintf("/proc/self/fd/%d", f.Fd()), nil
}

// evictFile drops path from the page cache: fsync first, because dirty
// pages survive POSIX_FADV_DONTNEED.
func evictFile(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("fadvise DONTNEED %s: %w", path, err)
	}
	return nil
}

// staleTempFiles lists our temp files whose owner pid is dead.
func staleTempFiles(alive func(int) bool) []string {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), tempPrefix+"*.payload"))
	var out []string
	for _, m := range matches {
		rest := strings.TrimPrefix(filepath.Base(m), tempPrefix)
		pidStr, _, _ := strings.Cut(rest, "-")
		var pid int
		if _, err := fmt.Sscanf(pidStr, "%d", &pid); err == nil && pid > 0 && !alive(pid) {
			out = append(out, m)
		}
	}
	return out
}
