package testenv

import (
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// envMountNS marks the child that InFreshMounts started.
const envMountNS = "ZCPROF_TEST_FRESH_MOUNTS"

// freshMountDirs are the pseudo-filesystems a fresh machine lacks, topmost
// first (tracefs also appears inside debugfs).
var freshMountDirs = []string{"/sys/kernel/debug/tracing", "/sys/kernel/debug", "/sys/kernel/tracing", "/sys/kernel/security"}

// InFreshMounts runs the calling test again in a child process with its own
// mount namespace that looks like a fresh machine's: no tracefs, debugfs or
// securityfs, and a private /run/lock (zcprof's lock files). The host's
// mounts are never changed. It returns true in the child, which runs the
// test body; in the parent it waits for the child and returns false, having
// failed (or skipped) the test as the child did.
//
//	if !testenv.InFreshMounts(t) {
//		return
//	}
func InFreshMounts(t *testing.T) bool {
	t.Helper()
	RequireBPF(t) // mounting needs root, like the BPF tests
	if os.Getenv(envMountNS) == t.Name() {
		freshMounts(t)
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+strings.ReplaceAll(t.Name(), "/", "$/^")+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envMountNS+"="+t.Name())
	// Go makes the new namespace's mounts private (MS_REC|MS_PRIVATE on /)
	// before exec: nothing the child mounts or unmounts reaches the host.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	// The test's own result line (a subtest of it may skip while it
	// passes; a subtest's own line is indented).
	result := func(r string) bool {
		return regexp.MustCompile(`(?m)^\s*--- ` + r + `: ` + regexp.QuoteMeta(t.Name()) + ` \(`).Match(out)
	}
	switch {
	case err != nil:
		t.Fatalf("in a private mount namespace: %v\n%s", err, out)
	case result("SKIP"):
		t.Skipf("skipped in the private mount namespace:\n%s", out)
	case !result("PASS"):
		t.Fatalf("in a private mount namespace: the test did not run:\n%s", out)
	}
	t.Logf("passed in a private mount namespace:\n%s", out)
	return false
}

// freshMounts unmounts, in the child's own namespace, what a fresh machine
// does not have.
func freshMounts(t *testing.T) {
	t.Helper()
	if err := os.MkdirAll("/run/lock", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", "/run/lock", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		t.Fatalf("private /run/lock: %v", err)
	}
	for _, dir := range freshMountDirs {
		for {
			err := unix.Unmount(dir, unix.MNT_DETACH)
			if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
				break // not a mount point (any more)
			}
			if err != nil {
				t.Fatalf("unmount %s: %v", dir, err)
			}
		}
	}
}
