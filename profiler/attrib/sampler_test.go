package attrib

import (
	"errors"
	"math"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/testenv"
	"github.com/zcprof/zcprof/workload"
)

// testHz is the default rate, which also gives a one-second transfer
// enough samples per path.
const testHz = DefaultHz

// sampledEntry runs cfg for a second and returns the sender's and the
// receiver's report entries with categories filled in.
func sampledEntry(t *testing.T, cfg workload.Config) (snd, rcv report.Process, run *sampledRun) {
	t.Helper()
	// 1 MiB per call: at 64 KiB zcprof's own per-call tracing rivals the
	// copy. Cubic, not our machines' bbr: bbr re-arms its pacing hrtimer on
	// every push, a hypervisor exit with interrupts off on our PVM guests,
	// and even with the early samples left out tcp.tx outweighed copy.tx in
	// one CI run (31.9% to 28.7%, 28% of the samples at an irq-enable). That
	// time is really spent; the categories are what is tested here.
	cfg.Size, cfg.Streams, cfg.Duration = 1<<20, 1, time.Second
	cfg.Congestion = "cubic"
	run = runSampled(t, cfg, testHz)
	cats := Estimate(run.iv, run.samples)
	entry := func(role workload.Role) report.Process {
		threads := run.threads(role)
		if len(threads) == 0 {
			t.Fatalf("no %s thread in the interval", role)
		}
		p := profiler.ProcessEntry(threads[0].Info.TGID, threads, false)
		FillPaths(p.Paths, threads, cats)
		checkConsistent(t, string(role), p)
		return p
	}
	return entry(workload.RoleSender), entry(workload.RoleReceiver), run
}

// checkConsistent: each split path's categories add up to its exact time
// (up to rounding), are estimates, and carry an interval.
func checkConsistent(t *testing.T, who string, p report.Process) {
	t.Helper()
	for _, path := range p.Paths {
		if len(path.Categories) == 0 {
			continue
		}
		var sum uint64
		for _, c := range path.Categories {
			sum += c.CPUNS
			if c.Exact || c.CI95NS == 0 {
				t.Errorf("%s %s %s: exact=%v ci95=%d, want an estimate with an interval", who, path.Path, c.Category, c.Exact, c.CI95NS)
			}
		}
		if d := math.Abs(float64(sum) - float64(path.CPUNS)); d > float64(len(path.Categories)) {
			t.Errorf("%s %s: categories add up to %d ns, path has %d ns", who, path.Path, sum, path.CPUNS)
		}
	}
}

// pct is a category's share of its path, in percent.
func pct(p report.Path, name string) float64 {
	if p.CPUNS == 0 {
		return 0
	}
	return 100 * float64(category(p, name).CPUNS) / float64(p.CPUNS)
}

func category(p report.Path, name string) report.Category {
	for _, c := range p.Categories {
		if c.Category == name {
			return c
		}
	}
	return report.Category{Category: name}
}

func findPath(paths []report.Path, name string) report.Path {
	for _, p := range paths {
		if p.Path == name {
			return p
		}
	}
	return report.Path{Path: name}
}

// total sums one category over all of an entry's paths.
func total(p report.Process, name string) (ns, ci uint64) {
	var v float64
	for _, path := range p.Paths {
		c := category(path, name)
		ns += c.CPUNS
		v += float64(c.CI95NS) * float64(c.CI95NS)
	}
	return ns, uint64(math.Sqrt(v))
}

// without is p with a share of one category's time taken out.
func without(p report.Path, name string, share float64) report.Path {
	out := p
	out.Categories = slices.Clone(p.Categories)
	for i, c := range out.Categories {
		if c.Category == name {
			out.Categories[i].CPUNS = uint64(float64(c.CPUNS) * (1 - share))
		}
	}
	return out
}

// largestCategory is the largest kernel category: tracing is the
// profiler's own instrumentation, not the path's work.
func largestCategory(p report.Path) string {
	best := report.Category{}
	for _, c := range p.Categories {
		if c.Category != Tracing && c.CPUNS > best.CPUNS {
			best = c
		}
	}
	return best.Category
}

func TestSampledWriteRead(t *testing.T) {
	requireBPF(t)
	// Sender and receiver on CPUs of their own: where they share one, a
	// wakeup that preempts lets the kernel skip its next rq clock update,
	// so it bills the rest of the waker's run to the woken thread, and the
	// exact time follows the kernel's cut while the samples follow who
	// ran. Unpinned under qemu, a sender that woke its receiver on its own
	// CPU had 639 ms of samples for 562 ms of exact time and the receiver
	// as much too little (6.1, 2 runs in 6, samples due before a switch
	// already set aside; docs/known-issues.md).
	snd, rcv, run := sampledEntry(t, workload.Config{Method: workload.MethodWrite, RxMethod: workload.RxRead,
		SenderCPU: 0, ReceiverCPU: 1 % runtime.NumCPU()})
	// Issue 4: copy.tx is the largest category of tx.write. Samples that
	// came early are left out (Samples.EarlyLeaves): on our PVM guests they
	// bunch up where TCP re-arms timers with interrupts off, and with them
	// counted tcp.tx outweighed copy.tx in one loaded run in six.
	tx := findPath(snd.Paths, "tx.write")
	withEarly := txPath(run, run.samples.WithEarly())
	t.Logf("tx.write: copy.tx %.1f%%, tcp.tx %.1f%% of %d ms; %.0f%% of its samples came early (left out; counted: copy.tx %.1f%%, tcp.tx %.1f%%), %.0f%% of the rest at an irq-enable",
		pct(tx, CopyTx), pct(tx, TCPTx), tx.CPUNS/1e6, 100*earlyShare(run), pct(withEarly, CopyTx), pct(withEarly, TCPTx), 100*irqEnableShare(run))
	// On kernels that zero pages as they are allocated (init_on_alloc=1,
	// Debian's default, so both VM guests; not this PVM host), every page
	// tcp_sendmsg copies into was first cleared by clear_page under
	// skb_page_frag_refill: skb.mem's work, over as many bytes as the copy.
	// Under emulation the two cost about the same (clear_page 48.4% of the
	// samples to the copy's 43.1% in one 6.1 run), so the clearing is set
	// aside before the largest category is taken.
	cleared := run.stackShare(workload.RoleSender, "tx.write", SkbMem, ";clear_page")
	t.Logf("tx.write: %.0f%% of skb.mem's samples cleared new pages (init_on_alloc), set aside", 100*cleared)
	if got := largestCategory(without(tx, SkbMem, cleared)); got != CopyTx {
		t.Errorf("sender tx.write: largest category %q, want copy.tx: %+v\nits heaviest stacks:\n%s", got, tx.Categories, run.heaviest(workload.RoleSender, "tx.write", 15))
	}
	rx := findPath(rcv.Paths, "rx.read")
	if got := largestCategory(rx); got != CopyRx {
		t.Errorf("receiver rx.read: largest category %q, want copy.rx: %+v", got, rx.Categories)
	}
	// The samples of each thread agree with its exact on-CPU time: every
	// sample stands for one period of CPU.
	per := map[uint32]uint64{}
	var leaves, early uint64
	for k, n := range run.samples.Leaves {
		per[k.Key.Gen] += n
		leaves += n
	}
	for k, n := range run.samples.EarlyLeaves {
		per[k.Key.Gen] += n
		early += n
	}
	// Every sample bound for a leaf is a leaf (or early), none lost;
	// samples due before a switch are set aside (Samples.Crossed). The
	// CPUs go on sampling while Collect reads: each reading's counters
	// are ahead of its leaves by at most its LeafLag plus a sample in
	// flight per CPU, never behind, so the difference of two readings is
	// within the later one's lag below and the earlier one's above. (A
	// fixed 1% failed once in CI, guests sharing two CPUs slowing reads.)
	s := run.samples
	target := s.Total - s.SystemTask - s.Crossed
	inFlight := uint64(runtime.NumCPU())
	lo, hi := target-min(target, s.LeafLag+inFlight), target+s.LeafLagBefore+inFlight
	if got := leaves + early; got < lo || got > hi || s.Dropped != 0 {
		t.Errorf("%d leaves + %d early samples, want the %d target samples (less up to %d taken while the leaves were read, more up to %d taken while the first reading's were, %d in flight; %d in all, %d not of a target, %d due before a switch, %d dropped)",
			leaves, early, target, s.LeafLag, s.LeafLagBefore, inFlight, s.Total, s.SystemTask, s.Crossed, s.Dropped)
	}
	t.Logf("%d leaves + %d early samples for %d target samples (lags %d and %d)", leaves, early, target, s.LeafLag, s.LeafLagBefore)
	if s.UsualLatenessNS == 0 {
		t.Errorf("no sample lateness measured")
	}
	for _, th := range run.iv.Threads {
		if run.roles[th.Info.Gen] == "" {
			continue
		}
		exact := float64(th.MeasuredNS())
		sampled := float64(per[th.Info.Gen]) * 1e9 / testHz
		if exact < 50e6 {
			t.Errorf("%s: only %.0f ms on CPU", run.roles[th.Info.Gen], exact/1e6)
			continue
		}
		lo, hi := 0.90, 1.10
		if testenv.InVM() {
			// Under qemu's emulation the cpu-clock hrtimer fires late, and
			// perf takes one sample per expiry however many periods have
			// passed (perf_swevent_hrtimer forwards the timer): 20-60% of
			// the periods gave a sample there. Never more than the time,
			// now that a sample due before its task was switched in is
			// set aside: taken late, it went to whatever ran next, and a
			// sender that slept often had 699 ms of samples for 566 ms
			// on CPU (6.12; 1 run in 4 on 6.12 and 6.1 over 10%).
			lo = 0.10
		}
		// The check is that samples go to the thread that ran, not that
		// the timer delivered them: periods that gave no sample on any
		// CPU may all have been this thread's. Those are the periods the
		// timer skipped after running late (Samples.Skipped), and
		// the samples not taken at all against the interval's length on
		// every CPU (among them the partial periods the rephaser drops);
		// and the samples set aside as due before a switch. A receiver
		// sampled at 57-80% of its exact time in 2 runs of 4 natively,
		// its sleeps locked to its CPU's sampling grid, until the grids
		// were restarted at random (rephase.go, docs/known-issues.md).
		skipped := float64(s.Skipped+s.Crossed) * 1e9 / testHz
		expected := float64(run.iv.DurationNS) / 1e9 * testHz * float64(runtime.NumCPU())
		notTaken := max(0, expected-float64(s.Total)) * 1e9 / testHz
		if sampled < lo*exact-skipped-notTaken || sampled > hi*exact {
			t.Errorf("%s: %.0f ms sampled vs %.0f ms exact on CPU (want %.0f%%-%.0f%% of it, less %.0f ms of timer periods skipped or set aside and %.0f ms not sampled on any CPU)",
				run.roles[th.Info.Gen], sampled/1e6, exact/1e6, 100*lo, 100*hi, skipped/1e6, notTaken/1e6)
		}
		t.Logf("%s: %.0f ms sampled vs %.0f ms exact on CPU (schedstat %.0f ms); timer periods skipped %.0f ms, not sampled %.0f ms, %d samples due before a switch set aside (all CPUs)",
			run.roles[th.Info.Gen], sampled/1e6, exact/1e6, float64(th.Runtime)/1e6, skipped/1e6, notTaken/1e6, s.Crossed)
	}
}

func TestSampledSpliceNoSendCopy(t *testing.T) {
	requireBPF(t)
	for _, m := range []string{workload.MethodSendfile, workload.MethodSplice} {
		t.Run(m, func(t *testing.T) {
			snd, _, _ := sampledEntry(t, workload.Config{Method: m, RxMethod: workload.RxRead, SenderCPU: -1, ReceiverCPU: -1})
			kernel := snd.CPU.KernelNS + snd.CPU.SoftirqNS + snd.CPU.HardirqNS
			ns, ci := total(snd, CopyTx)
			if kernel == 0 || float64(ns) >= 0.02*float64(kernel) {
				t.Errorf("copy.tx %d ns (±%d) of the sender's %d ns kernel time, want below 2%%", ns, ci, kernel)
			}
			path := "tx." + m
			if s, _ := total(snd, Splice); s == 0 {
				t.Errorf("no splice time in the sender: %+v", findPath(snd.Paths, path).Categories)
			}
		})
	}
}

func TestSampledZerocopyDeferredCopy(t *testing.T) {
	requireBPF(t)
	for _, m := range []string{workload.MethodMsgZerocopy, workload.MethodIOUringZC} {
		t.Run(m, func(t *testing.T) {
			snd, _, run := sampledEntry(t, workload.Config{Method: m, RxMethod: workload.RxRead, SenderCPU: -1, ReceiverCPU: -1})
			// Loopback forces skb_copy_ubufs in NET_RX (docs/architecture.md):
			// inside the sender's own send, unless the kernel defers the
			// softirq to ksoftirqd (6.1 does while ksoftirqd is runnable,
			// which a slow emulated guest keeps it; 6.5 reverted that), where
			// it is system time, or the softirq runs on the way out of an
			// interrupt of the receiver (seen under emulation on 6.12).
			ns, ci := total(snd, CopyDeferred)
			rx := findPath(snd.Paths, "softirq.net_rx")
			var sysNS, sysVar float64
			for k, cats := range Estimate(run.iv, run.samples) {
				if (k.Gen == 0 || run.roles[k.Gen] == workload.RoleReceiver) && k.Ctx.String() == "softirq.net_rx" {
					c := category(report.Path{Categories: cats}, CopyDeferred)
					sysNS += float64(c.CPUNS)
					sysVar += float64(c.CI95NS) * float64(c.CI95NS)
				}
			}
			if sysNS > float64(ns) {
				t.Logf("deferred copies mostly outside the sender: %.0f ns ±%.0f in system (ksoftirqd) and receiver NET_RX, %d ns ±%d in the sender (its NET_RX %d ns of %d ns on CPU)",
					sysNS, math.Sqrt(sysVar), ns, ci, rx.CPUNS, snd.CPU.OnCPUNS)
			} else if c := category(rx, CopyDeferred); c.CPUNS == 0 {
				t.Errorf("no copy.deferred in the sender's softirq.net_rx: %+v", rx.Categories)
			}
			ns, ci = ns+uint64(sysNS), uint64(math.Sqrt(float64(ci)*float64(ci)+sysVar))
			if ns == 0 || ci >= ns {
				t.Errorf("copy.deferred %d ns ±%d: not clearly visible (the sender's NET_RX: %d ns of %d ns on CPU: %+v)",
					ns, ci, rx.CPUNS, snd.CPU.OnCPUNS, rx.Categories)
			}
			if pin, _ := total(snd, ZcPin); pin == 0 {
				t.Error("no zc.pin time in the sender")
			}
			if tx, _ := total(snd, CopyTx); tx > ns/10 {
				t.Errorf("copy.tx %d ns: a zero-copy sender should not copy at send time (deferred %d ns)", tx, ns)
			}
		})
	}
}

// Close releases every perf event, link and the program; the session's
// program ids include the sampler's while it runs.
func TestSamplerClose(t *testing.T) {
	requireBPF(t)
	before := testenv.OpenFDs(t)
	sess, err := profiler.Open(profiler.Options{Target: profiler.Target{TIDs: []int{os.Getpid()}}})
	if err != nil {
		t.Fatal(err)
	}
	smp, err := Start(sess, DefaultHz)
	if err != nil {
		sess.Close()
		t.Fatal(err)
	}
	id := smp.ProgramID()
	found := false
	for _, pid := range sess.ProgramIDs() {
		found = found || pid == id
	}
	if id == 0 || !found {
		t.Errorf("sampler program %d not among the session's ids %v", id, sess.ProgramIDs())
	}
	if len(smp.fds) == 0 || len(smp.links) != len(smp.fds) {
		t.Errorf("%d perf events, %d links", len(smp.fds), len(smp.links))
	}
	// Counted into from the timer interrupt: the leaves are preallocated,
	// and on PREEMPT_RT the stacks too (preallocateSamples).
	rt := kernel.ReadHost().PreemptRT
	for name, want := range map[string]bool{"leaves": true, "samples": rt} {
		if got := smp.coll.Maps[name].Flags()&unix.BPF_F_NO_PREALLOC == 0; got != want {
			t.Errorf("%s preallocated %v, want %v (PREEMPT_RT %v)", name, got, want, rt)
		}
	}

	if _, err := smp.Collect(); err != nil {
		t.Error(err)
	}
	if err := smp.Close(); err != nil {
		t.Error(err)
	}
	if err := smp.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := smp.Collect(); err == nil {
		t.Error("Collect after Close succeeded")
	}
	if err := sess.Close(); err != nil {
		t.Error(err)
	}
	if p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id)); err == nil {
		p.Close()
		t.Errorf("sampler program %d still loaded", id)
	} else if !errors.Is(err, os.ErrNotExist) {
		t.Error(err)
	}
	if after := testenv.OpenFDs(t); after != before {
		t.Errorf("%d open fds after Close, %d before", after, before)
	}
}

func TestStartBadHz(t *testing.T) {
	for _, hz := range []int{0, -5, 1 << 30} {
		_, err := Start(nil, hz)
		if err == nil || !contains(err.Error(), "--sample-hz") {
			t.Errorf("Start(hz=%d): %v, want a --sample-hz error", hz, err)
		}
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub)))
}
