// Package pseudofs makes the kernel's pseudo-filesystems that zcprof reads
// (tracefs, securityfs) available when the machine has not mounted them,
// and leaves the machine as it found it.
//
// Fresh machines without systemd mount neither. cilium/ebpf finds the ids of
// classic tracepoints (syscalls/sys_enter_*, io_uring/*) through tracefs, and
// the lockdown mode is only readable through securityfs. Root may mount them;
// zcprof then does, records that it did, and unmounts when the last zcprof
// process using the mount leaves, even if the one that mounted it was
// killed:
//
//   - every user holds a shared flock on the filesystem's users file for as
//     long as it needs the mount (the kernel drops it when the process dies);
//   - mounting and unmounting happen under an exclusive flock on one mutex
//     file, so a release never races an acquire;
//   - a marker file holds the mount id of the mount zcprof made; release
//     unmounts only that mount, and only when no other user holds the users
//     file. A mount left by a killed zcprof is removed by the next release.
package pseudofs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/lockfile"
)

// FS is one pseudo-filesystem and where zcprof expects it.
type FS struct {
	Type  string // filesystem type, as mount(2) and mountinfo name it
	Dir   string // canonical mount point
	Magic int64  // statfs f_type of the mounted filesystem
	// Also lists other paths that count as the filesystem being there
	// (tracefs also appears under a mounted debugfs).
	Also []string
	// Needed names what depends on it, for doctor and for messages.
	Needed string
}

var (
	// Tracefs holds the ids of classic tracepoints; cilium/ebpf looks for
	// it in mountinfo, then at /sys/kernel/tracing and
	// /sys/kernel/debug/tracing.
	Tracefs = FS{Type: "tracefs", Dir: "/sys/kernel/tracing", Magic: unix.TRACEFS_MAGIC,
		Also:   []string{"/sys/kernel/debug/tracing"},
		Needed: "classic tracepoints of the byte classes (io_uring notifications; the send syscalls' bytes before 6.3)"}
	// Securityfs holds the lockdown mode.
	Securityfs = FS{Type: "securityfs", Dir: "/sys/kernel/security", Magic: unix.SECURITYFS_MAGIC,
		Needed: "the kernel lockdown mode (doctor)"}
)

// LockDir holds the lock and marker files. /run/lock is cleared at boot,
// like the mounts the markers describe.
const LockDir = "/run/lock"

// Hold is one user's claim on a pseudo-filesystem. Release it when done.
type Hold struct {
	fs    FS
	users int // fd holding the shared flock, -1 if none
	// Mounted is true when the mount in use is one zcprof made (now, or
	// left by an earlier zcprof); it is removed when the last user leaves.
	Mounted bool
}

// Note is the one line a document shows when zcprof mounted the
// filesystem, "" otherwise.
func (h *Hold) Note() string {
	if h == nil || !h.Mounted {
		return ""
	}
	return fmt.Sprintf("%s was not mounted: zcprof mounted it at %s for this run and unmounts it when the last zcprof exits", h.fs.Type, h.fs.Dir)
}

// Available reports whether the filesystem is mounted where cilium/ebpf
// and zcprof look for it.
func (fs FS) Available() bool {
	for _, p := range append([]string{fs.Dir}, fs.Also...) {
		var st unix.Statfs_t
		if unix.Statfs(p, &st) == nil && int64(st.Type) == fs.Magic {
			return true
		}
	}
	return false
}

// The users file and the marker are per mount namespace: a mount is
// visible only in its own, and /run/lock is usually shared with others (a
// test under `unshare -m` that mounted tracefs by hand must neither count
// as a user of the host's mount nor take its marker for a stale one).
func (fs FS) usersPath() string {
	return filepath.Join(LockDir, "zcprof-"+fs.Type+"-"+mountNS()+".lock")
}
func (fs FS) markerPath() string {
	return filepath.Join(LockDir, "zcprof-"+fs.Type+"-"+mountNS()+".mounted")
}
func mutexPath() string { return filepath.Join(LockDir, "zcprof-pseudofs.lock") }

// mountNS is this process's mount namespace inode, e.g. "4026531841".
func mountNS() string {
	l, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSuffix(strings.TrimPrefix(l, "mnt:["), "]")
}

// Acquire makes fs available for this process's lifetime (or until
// Release). It mounts fs when it is missing; an error says why it is still
// missing (not root, no such filesystem). When fs is already mounted by
// someone else, Acquire succeeds even if the lock files cannot be written.
func Acquire(fs FS) (*Hold, error) {
	h := &Hold{fs: fs, users: -1}
	mu, err := lockfile.Lock(mutexPath(), unix.LOCK_EX)
	if err != nil {
		if fs.Available() {
			return h, nil
		}
		return nil, fmt.Errorf("%s is not mounted at %s and zcprof cannot mount it: %w", fs.Type, fs.Dir, err)
	}
	defer unix.Close(mu)
	// No one takes the users file exclusively without the mutex: this
	// never waits.
	if h.users, err = lockfile.Lock(fs.usersPath(), unix.LOCK_SH); err != nil {
		h.users = -1
		if fs.Available() {
			return h, nil
		}
		return nil, fmt.Errorf("%s is not mounted at %s and zcprof cannot mount it: %w", fs.Type, fs.Dir, err)
	}
	if fs.Available() {
		h.Mounted = fs.ours()
		return h, nil
	}
	if err := fs.mount(); err != nil {
		unix.Close(h.users)
		h.users = -1
		return nil, err
	}
	h.Mounted = true
	return h, nil
}

// mount mounts fs at its canonical place and writes the marker.
func (fs FS) mount() error {
	err := unix.Mount(fs.Type, fs.Dir, fs.Type, unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	if err != nil {
		why := err.Error()
		if errors.Is(err, unix.EPERM) {
			why += " (mounting needs root: CAP_SYS_ADMIN)"
		}
		return fmt.Errorf("%s is not mounted at %s and zcprof cannot mount it: %s", fs.Type, fs.Dir, why)
	}
	id, ok := mountID(fs.Dir, fs.Type)
	if !ok {
		unix.Unmount(fs.Dir, unix.MNT_DETACH)
		return fmt.Errorf("mounted %s at %s but cannot find it in /proc/self/mountinfo", fs.Type, fs.Dir)
	}
	if err := os.WriteFile(fs.markerPath(), []byte(id+"\n"), 0o644); err != nil {
		unix.Unmount(fs.Dir, unix.MNT_DETACH)
		return fmt.Errorf("mounted %s at %s but cannot record it: %w", fs.Type, fs.Dir, err)
	}
	return nil
}

// ours reports whether the mount at fs.Dir is the one the marker records.
func (fs FS) ours() bool {
	b, err := os.ReadFile(fs.markerPath())
	if err != nil {
		return false
	}
	id, ok := mountID(fs.Dir, fs.Type)
	return ok && id == strings.TrimSpace(string(b))
}

// Release drops the claim and unmounts fs when zcprof mounted it and no
// other zcprof still uses it. Safe on nil and more than once.
func (h *Hold) Release() error {
	if h == nil || h.users < 0 {
		return nil
	}
	mu, err := lockfile.Lock(mutexPath(), unix.LOCK_EX)
	unix.Close(h.users)
	h.users = -1
	if err != nil {
		return fmt.Errorf("release %s: %w", h.fs.Type, err)
	}
	defer unix.Close(mu)
	return h.fs.removeUnused()
}

// RemoveStale unmounts a mount of fs that a killed zcprof left (zcprof's,
// and no zcprof uses it), as the start of every command does.
func RemoveStale(fs FS) error {
	if _, err := os.Stat(fs.markerPath()); err != nil {
		return nil
	}
	mu, err := lockfile.Lock(mutexPath(), unix.LOCK_EX)
	if err != nil {
		return err
	}
	defer unix.Close(mu)
	return fs.removeUnused()
}

// Orphaned reports whether zcprof's mount of fs is there with no zcprof
// using it: what a killed zcprof leaves until the next one starts. It
// looks under the mutex: between a release's dropping its claim and its
// unmounting, another zcprof's mount looks unused for a moment.
func Orphaned(fs FS) bool {
	if mu, err := lockfile.Lock(mutexPath(), unix.LOCK_EX); err == nil {
		defer unix.Close(mu)
	}
	if !fs.ours() {
		return false
	}
	fd, err := lockfile.TryLock(fs.usersPath(), unix.LOCK_EX)
	if fd >= 0 {
		unix.Close(fd)
	}
	return err == nil && fd >= 0
}

// removeUnused unmounts zcprof's mount of fs when no user holds it. The
// caller holds the mutex.
func (fs FS) removeUnused() error {
	last, err := lockfile.TryLock(fs.usersPath(), unix.LOCK_EX)
	if err != nil || last < 0 {
		return err // another user remains
	}
	defer unix.Close(last)
	if _, err := os.Stat(fs.markerPath()); err != nil {
		return nil // not zcprof's mount
	}
	if fs.ours() {
		err := unix.Unmount(fs.Dir, unix.MNT_DETACH)
		if errors.Is(err, unix.EPERM) {
			// A zcprof without CAP_SYS_ADMIN found root's zcprof's
			// mount unused: the next privileged zcprof removes it.
			return nil
		}
		if err != nil {
			return fmt.Errorf("unmount %s at %s: %w", fs.Type, fs.Dir, err)
		}
	}
	// Ours and unmounted now, or gone already (unmounted by hand, or made
	// in another mount namespace that no longer has users).
	if err := os.Remove(fs.markerPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("release %s: %w", fs.Type, err)
	}
	return nil
}
