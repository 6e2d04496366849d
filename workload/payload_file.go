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

// createPayloadFile writes fileLen pattern bytes to a new temp file and
// returns its path. The file is fsynced so that a later DONTNEED can evict it.
func createPayloadFile() (string, error) {
	f, err := os.CreateTemp("", fmt.Sprintf("%s%d-*.payload", tempPrefix, os.Getpid()))
	if err != nil {
		return "", err
	}
	buf := make([]byte, fileLen)
	fillPattern(buf, 0)
	_, err = f.Write(buf)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("payload file: %w", err)
	}
	return f.Name(), nil
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
