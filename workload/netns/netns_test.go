package netns

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

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
	ids := []string{p.Sender.ID(), p.Receiver.ID()}
	if ids[0] == ids[1] || !strings.HasPrefix(ids[0], "net:[") {
		t.Fatalf("namespace ids %v", ids)
	}
	held := HeldBy(os.Getpid())
	for _, id := range ids {
		if !slices.Contains(held, id) {
			t.Errorf("%s not held by this process (%v)", id, held)
		}
	}
	if names, _ := List(); slices.ContainsFunc(names, func(n string) bool { o, _ := OwnerPID(n); return o == os.Getpid() }) {
		t.Errorf("bind-mounted under %s: %v", RunDir, names)
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
		if err == nil {
			var out []byte
			out, err = exec.Command("ip", "link", "show", senderIf).CombinedOutput()
			if err == nil && !strings.Contains(string(out), "mtu 9000") {
				err = fmt.Errorf("veth mtu: %s", out)
			}
		}
		errc <- err
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// The kernel frees them once the last reference is gone.
	for _, id := range ids {
		deadline := time.Now().Add(5 * time.Second)
		for InUse(id) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if InUse(id) {
			t.Errorf("%s still in use after Close", id)
		}
	}
	if out, _ := exec.Command("ip", "link", "show").CombinedOutput(); strings.Contains(string(out), senderIf) || strings.Contains(string(out), receiverIf) {
		t.Errorf("veth visible in host namespace:\n%s", out)
	}
}

// A process that is SIGKILLed takes its namespaces with it.
func TestNamespacesDieWithTheProcess(t *testing.T) {
	requireRoot(t)
	if os.Getenv("ZCPROF_TEST_NETNS_HOLDER") != "" {
		p, err := Create(0)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(p.Sender.ID(), p.Receiver.ID())
		select {}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNamespacesDieWithTheProcess$")
	cmd.Env = append(os.Environ(), "ZCPROF_TEST_NETNS_HOLDER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	ids := strings.Fields(line)
	cmd.Process.Kill()
	cmd.Wait()
	if len(ids) != 2 || !strings.HasPrefix(ids[0], "net:[") {
		t.Fatalf("holder said %q", line)
	}
	for _, id := range ids {
		deadline := time.Now().Add(5 * time.Second)
		for InUse(id) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if InUse(id) {
			t.Errorf("%s outlived its SIGKILLed process", id)
		}
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
	if err := ip(nil, "netns", "add", stale); err != nil {
		t.Fatal(err)
	}
	defer ip(nil, "netns", "del", stale)
	live := fmt.Sprintf("%s%d-1-tx", Prefix, os.Getpid())
	if err := ip(nil, "netns", "add", live); err != nil {
		t.Fatal(err)
	}
	defer ip(nil, "netns", "del", live)

	removed, err := CleanupStale()
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != stale || Exists(stale) {
		t.Fatalf("removed %v; %s exists=%v", removed, stale, Exists(stale))
	}
	if !Exists(live) {
		t.Fatal("CleanupStale removed a live process's namespace")
	}
}
