package kernel

import (
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/testenv"
)

// Privileged names exactly the capabilities missing, root or not: each
// case drops capabilities on one OS thread only (capabilities are per
// thread), which then dies with its goroutine.
func TestPrivilegedNamesTheMissingCapability(t *testing.T) {
	testenv.RequireBPF(t)
	for _, c := range []struct {
		drop      []int
		want, not string
	}{
		{[]int{unix.CAP_PERFMON, unix.CAP_SYS_ADMIN}, "needs CAP_PERFMON, which", "CAP_BPF"},
		{[]int{unix.CAP_BPF, unix.CAP_SYS_ADMIN}, "needs CAP_BPF, which", "CAP_PERFMON"},
		{[]int{unix.CAP_BPF, unix.CAP_PERFMON, unix.CAP_SYS_ADMIN}, "needs CAP_BPF and CAP_PERFMON, which", "memlock"},
		{[]int{unix.CAP_BPF, unix.CAP_PERFMON}, "", ""}, // CAP_SYS_ADMIN stands in for both
	} {
		errc := make(chan error, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
			if err := dropEffective(c.drop...); err != nil {
				t.Error(err)
			}
			errc <- Privileged()
		}()
		err := <-errc
		if c.want == "" {
			if err != nil {
				t.Errorf("drop %v: %v", c.drop, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), c.not) || strings.Contains(err.Error(), "\n") {
			t.Errorf("drop %v: %v; want one line with %q and without %q", c.drop, err, c.want, c.not)
		}
	}
	if err := Privileged(); err != nil {
		t.Errorf("the test's other threads lost capabilities: %v", err)
	}
}

// dropEffective removes capabilities from the calling thread's effective set.
func dropEffective(cs ...int) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	for _, c := range cs {
		data[c/32].Effective &^= 1 << (uint(c) % 32)
	}
	return unix.Capset(&hdr, &data[0])
}
