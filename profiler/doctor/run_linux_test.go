package doctor

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/ksym"
	"github.com/zcprof/zcprof/profiler/pseudofs"
	"github.com/zcprof/zcprof/profiler/testenv"
)

func requireBPF(t *testing.T) { testenv.RequireBPF(t) }

// TestRunOnThisKernel runs the real probes and checks them against facts
// read independently of Run. The fentry/kprobe expectations are those of
// the 6.18 development machines (docs/known-issues.md) and are
// only asserted there; other kernels get what ZCPROF_EXPECT_* (make
// vmtest, docs/vmtest.md) says they give.
func TestRunOnThisKernel(t *testing.T) {
	requireBPF(t)
	cfg, _, err := kernel.ReadConfig(kernel.Release())
	if err != nil {
		t.Fatalf("kernel config: %v", err)
	}

	r := Run(Options{})
	t.Logf("accounting=%s attribution=%s unavailable=%v", r.Accounting, r.Attribution, r.Unavailable)

	status := func(kind, name string) Check {
		t.Helper()
		c, ok := r.Check(kind, name)
		if !ok {
			t.Fatalf("no %s check %q", kind, name)
		}
		return c
	}
	for _, kind := range []string{kernel.TpBTF, kernel.RawTp} {
		if c := status(KindAttach, kind); c.Status != StatusOK {
			t.Errorf("%s: %s (%s)", kind, c.Status, c.Detail)
		}
	}
	if c := status(KindAttach, kernel.PerfEvent); c.Status != StatusOK || !strings.Contains(c.Detail, "with a kernel stack") {
		t.Errorf("perf_event: %s (%s)", c.Status, c.Detail)
	}
	if r.Accounting != kernel.TpBTF {
		t.Errorf("accounting = %s, want tp_btf", r.Accounting)
	}
	if hz := kernel.ConfigHZ(cfg); r.HZ <= 0 || r.HZ != hz {
		t.Errorf("HZ = %d, CONFIG_HZ = %d", r.HZ, hz)
	}
	if r.IRQTimeAccounting != kernel.ConfigEnabled(cfg, "CONFIG_IRQ_TIME_ACCOUNTING") {
		t.Errorf("IRQTimeAccounting = %v, config disagrees", r.IRQTimeAccounting)
	}
	if cfg != nil && r.PreemptRT != kernel.ConfigEnabled(cfg, "CONFIG_PREEMPT_RT") {
		t.Errorf("PreemptRT = %v, config disagrees", r.PreemptRT)
	}
	if !kernel.ConfigEnabled(cfg, "CONFIG_KPROBES") {
		if c := status(KindAttach, kernel.Kprobe); c.Status != StatusUnavailable || !strings.Contains(c.Detail, "CONFIG_KPROBES") {
			t.Errorf("kprobe on a kernel without CONFIG_KPROBES: %s (%s)", c.Status, c.Detail)
		}
	}
	tab, err := ksym.Read()
	if err != nil {
		t.Fatal(err)
	}
	syms := tab.Names
	if syms["tcp_sendmsg_locked"] {
		if c := status(KindFunction, "tcp_sendmsg_locked"); c.Status == StatusUnavailable {
			t.Errorf("tcp_sendmsg_locked is in kallsyms but reported %s (%s)", c.Status, c.Detail)
		}
	}
	if _, err := os.Stat("/sys/kernel/tracing/events/tcp/tcp_sendmsg_locked"); err == nil {
		if c := status(KindTracepoint, "tcp_sendmsg_locked"); c.Status != StatusOK {
			t.Errorf("tracepoint tcp_sendmsg_locked exists but reported %s (%s)", c.Status, c.Detail)
		}
	}

	if devMachine(cfg) {
		c := status(KindAttach, kernel.Fentry)
		if c.Status != StatusUnavailable || !strings.Contains(c.Detail, "operation not permitted") || !strings.Contains(c.Detail, "locked down") {
			t.Errorf("fentry on the dev kernel: %s (%s), want EPERM explained as the locked function tracer", c.Status, c.Detail)
		}
		if r.Attribution != kernel.Sampling {
			t.Errorf("attribution = %s, want sampling", r.Attribution)
		}
		if c := status(KindFunction, "_copy_from_iter"); c.Status != StatusDegraded || !strings.Contains(c.Detail, "not tried") {
			t.Errorf("_copy_from_iter: %s (%s)", c.Status, c.Detail)
		}
	} else {
		// Other kernels (make vmtest): what .ci/vmtest says they give.
		assertExpected(t, r)
	}

	if left := leftoverPrograms(t); len(left) > 0 {
		t.Errorf("programs still loaded after Run: %v", left)
	}
	// A second Run must not leave more fds open than the first (links,
	// perf events, maps): the first one warmed up the runtime's netpoller.
	before := testenv.OpenFDs(t)
	Run(Options{Busy: 20 * time.Millisecond})
	if after := testenv.OpenFDs(t); after != before {
		t.Errorf("open fds: %d before a Run, %d after", before, after)
	}
}

// TestRunOnAFreshMachine: with neither tracefs nor securityfs mounted (a
// private mount namespace that looks like a fresh machine's), doctor
// mounts both while it runs and says so in their rows, reads the lockdown
// mode, attaches the classic tracepoint by its tracefs id, and leaves
// neither mounted.
func TestRunOnAFreshMachine(t *testing.T) {
	if !testenv.InFreshMounts(t) {
		return
	}
	r := Run(Options{Busy: 20 * time.Millisecond})
	for _, fs := range []pseudofs.FS{pseudofs.Tracefs, pseudofs.Securityfs} {
		c, ok := r.Check(KindPseudoFS, fs.Type)
		if !ok {
			t.Fatalf("no %s row", fs.Type)
		}
		if c.Status != StatusOK || !strings.Contains(c.Detail, "not mounted by the machine: zcprof mounts it") || !strings.Contains(c.Detail, fs.Needed) {
			t.Errorf("%s: %s (%s), want ok, mounted by zcprof, naming what needs it (%s)", fs.Type, c.Status, c.Detail, fs.Needed)
		}
		if fs.Available() {
			t.Errorf("%s left mounted after doctor", fs.Type)
		}
	}
	if strings.HasPrefix(r.Settings.Lockdown, "unknown") {
		t.Errorf("lockdown %q with securityfs unmounted by the machine", r.Settings.Lockdown)
	}
	if c, ok := r.Check(KindTracepoint, "io_uring_complete"); !ok || c.Status != StatusOK || !strings.Contains(c.Detail, "tracefs id") {
		t.Errorf("io_uring_complete: %s (%s), want attached by its tracefs id", c.Status, c.Detail)
	}
}

// devMachine: the 6.18 development/CI kernels (docs/known-issues.md).
func devMachine(cfg map[string]string) bool {
	return strings.HasPrefix(kernel.Release(), "6.18") && !kernel.ConfigEnabled(cfg, "CONFIG_KPROBES")
}

// leftoverPrograms lists loaded programs named like the doctor's probes.
// Freeing a program after its last fd closes can be deferred to a kernel
// worker, so give it a moment.
func leftoverPrograms(t *testing.T) []string {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left = left[:0]
		for id := ebpf.ProgramID(0); ; {
			next, err := ebpf.ProgramGetNextID(id)
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			if err != nil {
				t.Fatalf("list programs: %v", err)
			}
			id = next
			prog, err := ebpf.NewProgramFromID(id)
			if err != nil {
				continue // freed meanwhile
			}
			info, err := prog.Info()
			prog.Close()
			if err == nil && strings.HasPrefix(info.Name, kernel.ProbePrefix) {
				left = append(left, info.Name)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
	}
}
