package pseudofs

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/testenv"
)

// envHolder makes the test binary a zcprof stand-in that acquires tracefs,
// says so, and waits to be killed.
const envHolder = "ZCPROF_TEST_PSEUDOFS_HOLDER"

// envOtherNS makes the test binary a zcprof in a mount namespace of its
// own (sharing /run/lock) that acquires and releases tracefs: it sees a
// copy of the parent's mount, with another mount id.
const envOtherNS = "ZCPROF_TEST_PSEUDOFS_OTHER_NS"

func TestMain(m *testing.M) {
	if os.Getenv(envOtherNS) != "" {
		h, err := Acquire(Tracefs)
		if err == nil {
			err = h.Release()
		}
		if err != nil || h.Mounted {
			fmt.Println("acquire:", err, h != nil && h.Mounted)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv(envHolder) != "" {
		h, err := Acquire(Tracefs)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("held", h.Mounted)
		// Not select{}: with no timer pending, the runtime calls that a
		// deadlock and exits, dropping the hold while the test still
		// counts on it (the early unmount once blamed on 6.1).
		for {
			time.Sleep(time.Hour)
		}
	}
	os.Exit(m.Run())
}

func mustAcquire(t *testing.T, fs FS) *Hold {
	t.Helper()
	h, err := Acquire(fs)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func mustRelease(t *testing.T, h *Hold) {
	t.Helper()
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

func markerExists(fs FS) bool {
	_, err := os.Stat(fs.markerPath())
	return err == nil
}

// A fresh machine: the first user mounts, the last one unmounts, and a user
// in between changes nothing.
func TestAcquireMountsLastReleaseUnmounts(t *testing.T) {
	if !testenv.InFreshMounts(t) {
		return
	}
	if Tracefs.Available() {
		t.Fatal("tracefs is mounted in the fresh namespace")
	}
	a := mustAcquire(t, Tracefs)
	if !Tracefs.Available() || !a.Mounted || !markerExists(Tracefs) {
		t.Fatalf("after the first Acquire: available %v, mounted by zcprof %v, marker %v", Tracefs.Available(), a.Mounted, markerExists(Tracefs))
	}
	if a.Note() == "" {
		t.Error("no note for a mount zcprof made")
	}
	b := mustAcquire(t, Tracefs)
	if !b.Mounted {
		t.Error("a second user does not see zcprof's mount as zcprof's")
	}
	mustRelease(t, a)
	if !Tracefs.Available() {
		t.Fatal("tracefs was unmounted while a second user held it")
	}
	mustRelease(t, b)
	if Tracefs.Available() || markerExists(Tracefs) {
		t.Fatalf("after the last Release: available %v, marker %v", Tracefs.Available(), markerExists(Tracefs))
	}
	mustRelease(t, b) // twice is harmless
}

// A mount zcprof did not make is never touched.
func TestPreexistingMountLeftAlone(t *testing.T) {
	if !testenv.InFreshMounts(t) {
		return
	}
	if err := unix.Mount("tracefs", Tracefs.Dir, "tracefs", 0, ""); err != nil {
		t.Fatal(err)
	}
	h := mustAcquire(t, Tracefs)
	if h.Mounted || h.Note() != "" {
		t.Errorf("a mount made by hand is reported as zcprof's: %q", h.Note())
	}
	mustRelease(t, h)
	if !Tracefs.Available() {
		t.Fatal("Release unmounted a tracefs zcprof did not mount")
	}
}

// A SIGKILLed zcprof cannot unmount; its mount stays while another zcprof
// still uses it and goes with the next last release.
func TestKilledUsersMountRemovedByNextRelease(t *testing.T) {
	if !testenv.InFreshMounts(t) {
		return
	}
	holder := exec.Command(os.Args[0])
	holder.Env = append(os.Environ(), envHolder+"=1")
	var holderErr strings.Builder
	holder.Stderr = &holderErr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the holder's stderr: %s", holderErr.String())
		}
	})
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "held true" {
		holder.Process.Kill()
		holder.Wait()
		t.Fatalf("holder: %q", line)
	}
	// While it lives, another user's release leaves the mount.
	mustRelease(t, mustAcquire(t, Tracefs))
	if !Tracefs.Available() || Orphaned(Tracefs) {
		t.Fatalf("while another zcprof held tracefs: available %v, orphaned %v", Tracefs.Available(), Orphaned(Tracefs))
	}
	if err := RemoveStale(Tracefs); err != nil || !Tracefs.Available() {
		t.Fatalf("RemoveStale removed a mount in use (%v)", err)
	}
	holder.Process.Kill()
	holder.Wait()
	if !Tracefs.Available() || !Orphaned(Tracefs) {
		t.Fatalf("after the holder was killed: available %v, orphaned %v", Tracefs.Available(), Orphaned(Tracefs))
	}
	h := mustAcquire(t, Tracefs)
	if !h.Mounted {
		t.Error("the killed zcprof's mount is not recognised as zcprof's")
	}
	mustRelease(t, h)
	if Tracefs.Available() || markerExists(Tracefs) {
		t.Fatalf("the killed zcprof's mount survived the next release (marker %v)", markerExists(Tracefs))
	}
}

// The start of every command removes a killed zcprof's unused mount.
func TestRemoveStale(t *testing.T) {
	if !testenv.InFreshMounts(t) {
		return
	}
	h := mustAcquire(t, Tracefs)
	unix.Close(h.users) // as if its process had been killed
	h.users = -1
	if !Orphaned(Tracefs) {
		t.Fatal("not orphaned")
	}
	if err := RemoveStale(Tracefs); err != nil {
		t.Fatal(err)
	}
	if Tracefs.Available() || markerExists(Tracefs) || Orphaned(Tracefs) {
		t.Fatalf("after RemoveStale: available %v, marker %v", Tracefs.Available(), markerExists(Tracefs))
	}
}

// zcprof in another mount namespace that shares /run/lock does not take
// the marker of this namespace's mount, left by a killed zcprof, for a
// stale one (it sees a copy with another mount id): the mount is still
// removed here.
func TestOtherMountNamespaceLeavesOurMountAlone(t *testing.T) {
	if !testenv.InFreshMounts(t) {
		return
	}
	h := mustAcquire(t, Tracefs)
	unix.Close(h.users) // as if its process had been killed
	h.users = -1
	other := exec.Command(os.Args[0])
	other.Env = append(os.Environ(), envOtherNS+"=1")
	other.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	if out, err := other.CombinedOutput(); err != nil {
		t.Fatalf("the other namespace's zcprof: %v %s", err, out)
	}
	if !Orphaned(Tracefs) {
		t.Fatalf("after the other namespace's release: marker %v, mounted %v", markerExists(Tracefs), Tracefs.Available())
	}
	if err := RemoveStale(Tracefs); err != nil {
		t.Fatal(err)
	}
	if Tracefs.Available() || markerExists(Tracefs) {
		t.Fatal("the killed zcprof's mount survived RemoveStale")
	}
}

// securityfs: what doctor needs for the lockdown mode.
func TestSecurityfsForLockdown(t *testing.T) {
	if !testenv.InFreshMounts(t) {
		return
	}
	if _, err := os.Stat("/sys/kernel/security"); err != nil {
		t.Skipf("kernel without securityfs: %v", err)
	}
	h := mustAcquire(t, Securityfs)
	b, err := os.ReadFile("/sys/kernel/security/lockdown")
	mustRelease(t, h)
	if err != nil {
		t.Fatalf("lockdown with securityfs mounted by zcprof: %v", err)
	}
	if Securityfs.Available() {
		t.Fatal("securityfs left mounted")
	}
	t.Logf("lockdown: %s", strings.TrimSpace(string(b)))
}

// Another zcprof's release in progress (its claim dropped, its unmount not
// yet done) is not an orphaned mount: tests that check for leftovers run
// beside other packages' sessions, which mount and unmount all the time.
func TestReleaseInProgressIsNotOrphaned(t *testing.T) {
	if !testenv.InFreshMounts(t) {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 500; i++ {
			h, err := Acquire(Tracefs)
			if err == nil {
				err = h.Release()
			}
			if err != nil {
				t.Error(err) // not Fatal: this is not the test's goroutine
				return
			}
		}
	}()
	seen := 0
	for {
		select {
		case <-done:
			if seen > 0 {
				t.Fatalf("a mount in the middle of its release looked orphaned %d times", seen)
			}
			return
		default:
			if Orphaned(Tracefs) {
				seen++
			}
		}
	}
}
