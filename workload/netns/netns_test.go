package netns

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
}

func TestOwnerPID(t *testing.T) {
	for name, want := range map[string]int{
		"zcprof-123-4-tx": 123, "zcprof-9-1-rx": 9, "zcprof-x-1-rx": 0, "other-1-2": 0, "zcprof-": 0,
	} {
		got, ok := OwnerPID(name)
		if (want != 0) != ok || got != want {
			t.Errorf("OwnerPID(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
}

func TestCreateEnterClose(t *testing.T) {
	requireRoot(t)
	p, err := Create(9000)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, n := range []string{p.Sender, p.Receiver} {
		if !Exists(n) {
			t.Fatalf("%s missing", n)
		}
	}
	// Enter on a dedicated thread; the goroutine exits locked so the thread dies.
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := Enter(p.Sender); err != nil {
			errc <- err
			return
		}
		ifs, err := netIfs()
		if err == nil && !strings.Contains(ifs, senderIf) {
			err = fmt.Errorf("sender netns has no %s: %s", senderIf, ifs)
		}
		errc <- err
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if out, _ := exec.Command("ip", "-n", p.Sender, "link", "show", senderIf).CombinedOutput(); !strings.Contains(string(out), "mtu 9000") {
		t.Errorf("veth mtu: %s", out)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, n := range []string{p.Sender, p.Receiver} {
		if Exists(n) {
			t.Errorf("%s still exists after Close", n)
		}
	}
	if out, _ := exec.Command("ip", "link", "show").CombinedOutput(); strings.Contains(string(out), senderIf) || strings.Contains(string(out), receiverIf) {
		t.Errorf("veth visible in host namespace:\n%s", out)
	}
}

// netIfs lists interface names of the calling thread's namespace.
func netIfs() (string, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	var names []string
	for i := 1; i < 64; i++ {
		ifr, err := unix.NewIfreq("")
		if err != nil {
			return "", err
		}
		ifr.SetUint32(uint32(i))
		if err := unix.IoctlIfreq(fd, unix.SIOCGIFNAME, ifr); err == nil {
			names = append(names, ifr.Name())
		}
	}
	return strings.Join(names, ","), nil
}

// deadPID returns the pid of a process that has already exited.
func deadPID(t *testing.T) int {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if Alive(pid) {
		t.Skip("pid reused already")
	}
	return pid
}

func TestCleanupStale(t *testing.T) {
	requireRoot(t)
	// Hold the lock from planting to checking: other test binaries running
	// now start zcprof runs, whose cleanup would otherwise remove it first.
	unlock, err := LockStale()
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	stale := fmt.Sprintf("%s%d-1-tx", Prefix, deadPID(t))
	if err := ip("netns", "add", stale); err != nil {
		t.Fatal(err)
	}
	defer ip("netns", "del", stale)
	live, err := Create(0)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()

	removed, err := CleanupStale()
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != stale || Exists(stale) {
		t.Fatalf("removed %v; %s exists=%v", removed, stale, Exists(stale))
	}
	if !Exists(live.Sender) || !Exists(live.Receiver) {
		t.Fatal("CleanupStale removed a live run's namespaces")
	}
}
