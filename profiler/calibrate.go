package profiler

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// Dispatch calibration: what a handler run costs that the handler cannot
// time itself. Each accounting handler times itself from its first clock
// read to its last (taxonomy.CtxProbe; on most runs the running mean of
// the runs that read it twice, bpf/common.h probe_done_est); before the
// first and after the last come
// the tracepoint's dispatch to the program, the syscall entry/exit slow
// path that any sys_enter/sys_exit probe forces on the task, the
// handler's own first and last instructions, and what its code and data
// evict from the task's caches. The accounting's own sys_enter and
// sys_exit programs show it, loaded a second time to follow only the
// calibrating thread: that thread's CPU for a batch of getppid() calls
// with them attached, minus without, minus what they timed, per run. Each
// round measures a batch without, one with, and one without again; the
// estimate is the median over the rounds of with minus the mean of its two
// neighbours, which cancels drifts in the machine's load that a min of
// each kind does not. The batch with them runs after a first, unmeasured
// batch: for milliseconds after an attach, calls cost more (measured on our
// 6.18 guests: 100 ns more per run than none right after attaching, 88
// after 30,000 calls, cause unknown), which a session attached for
// seconds pays once; counted in, it put a fifth of the getppid loop's own
// user time into probe time. (A trivial program of two clock reads on the same
// hooks, which this used before, left out 30-40 ns per run here, about as
// much again as it measured: the getppid loop's reported user time came
// out 2.5 times its tick-sampled one.)
//
// A second figure: with a trivial program (floor.bpf.c calib_*) on
// sys_enter throughout, the extra CPU per run of one on sys_exit too,
// minus its clock pair, is a tracepoint's dispatch to a program (the
// hook's wrapper and bpf_trace_run*) without the syscall slow path, which
// the first already forced. (Measured before as a second copy beside the
// first on both hooks: 80 ns here against 58, the difference being the
// tracepoint's switch from a static call of its only probe to its
// iterator.) The feature programs on other
// hooks (byte classes, the softirq owner split) and the accounting's
// interrupt and softirq handlers count it per run as probe time
// (cfg_hook_dispatch_ns, bpf/common.h).
//
// A third, for the sampler: the calibrating thread's batches with a
// cpu-clock event of its own running a trivial timed program
// (calib_sample), extra CPU per sample minus what the program timed, is
// what a sample costs beyond its program: the timer interrupt, its hrtimer
// and perf's dispatch (cfg_sample_dispatch_ns, sampler.bpf.c).
const (
	calibCalls  = 30000
	calibRounds = 9
	// calibMaxNS caps the estimate: above it the measurement was disturbed
	// beyond repair and counting it would hide real user or path time.
	// A sample's figure is capped at half its calibrating period instead
	// (an interrupt can cost tens of µs on virtual machines).
	calibMaxNS = 1000
)

// dispatchEstimate is one calibrated figure, in ns per run, or why it
// could not be measured (then 0).
type dispatchEstimate struct {
	ns  uint64
	err error
}

// calibration holds the figures measured so far: once per process, the
// syscall figure once per accounting backend.
var calibration struct {
	mu     sync.Mutex
	hook   *dispatchEstimate
	sample *dispatchEstimate
	sys    map[string]dispatchEstimate
}

// resetCalibration forgets every figure: the next session measures again.
func resetCalibration() {
	calibration.mu.Lock()
	defer calibration.mu.Unlock()
	calibration.hook, calibration.sample, calibration.sys = nil, nil, nil
}

// DispatchNS is the per-run cost the accounting's handlers of backend on
// sys_enter and sys_exit cannot time (measured once per
// process and backend, before anything of the session is attached); err
// says why it could not be measured (then 0).
func DispatchNS(backend string) (uint64, error) {
	calibration.mu.Lock()
	defer calibration.mu.Unlock()
	e, ok := calibration.sys[backend]
	if !ok {
		e = onCalibrationThread(func() dispatchEstimate { return measureHandlerDispatch(backend) })
		if calibration.sys == nil {
			calibration.sys = map[string]dispatchEstimate{}
		}
		calibration.sys[backend] = e
	}
	return e.ns, e.err
}

// HookDispatchNS is a tracepoint's dispatch to its only program, which the
// feature programs and the accounting's interrupt and softirq handlers
// cannot time (measured once per process); err says why
// it could not be measured (then 0).
func HookDispatchNS() (uint64, error) { return measuredOnce(&calibration.hook, measureHookDispatch) }

// SampleDispatchNS is what a sample of a cpu-clock perf event costs the
// sampled thread beyond its program's run: the timer interrupt, its
// hrtimer and perf's dispatch to the program (measured once per process;
// tens of µs on some virtual machines, where an interrupt is dear). The
// sampler counts it per sample as probe time. err says why it could not
// be measured (then 0).
func SampleDispatchNS() (uint64, error) {
	return measuredOnce(&calibration.sample, measureSampleDispatch)
}

// measuredOnce is the figure in *slot, measured on a calibration thread
// the first time it is asked for.
func measuredOnce(slot **dispatchEstimate, measure func() dispatchEstimate) (uint64, error) {
	calibration.mu.Lock()
	defer calibration.mu.Unlock()
	if *slot == nil {
		e := onCalibrationThread(measure)
		*slot = &e
	}
	return (*slot).ns, (*slot).err
}

// SetHookDispatch sets an object's cfg_hook_dispatch_ns (bpf/common.h)
// before load: every object with programs timed by PROBE_PROG or PROBE_TP
// declares it. 0 when it could not be measured (the session says why).
func SetHookDispatch(spec *ebpf.CollectionSpec) error {
	v := spec.Variables["cfg_hook_dispatch_ns"]
	if v == nil {
		return errors.New("object declares no cfg_hook_dispatch_ns: an object in bpf/ is stale, run make generate")
	}
	ns, _ := HookDispatchNS()
	return v.Set(ns)
}

// onCalibrationThread runs measure on one OS thread of its own, never
// reused after.
func onCalibrationThread(measure func() dispatchEstimate) dispatchEstimate {
	done := make(chan dispatchEstimate, 1)
	go func() {
		runtime.LockOSThread()
		done <- measure()
	}()
	return <-done
}

// calibrationFailed says why a figure could not be measured.
func calibrationFailed(err error) dispatchEstimate {
	return dispatchEstimate{err: fmt.Errorf("calibration: %w", err)}
}

// batchPair is what one figure's rounds compare: the programs under test,
// attached for one batch, and the counts of what they timed.
type batchPair struct {
	attach func() ([]link.Link, error)
	// counted reads the runs and timed ns of the programs under test so far.
	counted func() (timedNS, runs uint64, err error)
	// minRuns is how many runs the rounds give the programs under test at
	// least (fewer: they missed events).
	minRuns uint64
	// maxNS caps the estimate (0: calibMaxNS).
	maxNS uint64
}

// measure runs calibRounds rounds of a batch without the programs, two
// with (the first not measured), and one without again, and estimates
// their untimed cost per run: the median over the rounds of the measured
// batch with minus the mean of its neighbours, per run, minus what a run
// timed itself.
func (b batchPair) measure() dispatchEstimate {
	var diffs []float64
	var timed, count uint64
	for r := 0; r < calibRounds; r++ {
		none := getppidBatch()
		timed0, runs0, err := b.counted()
		if err != nil {
			return calibrationFailed(err)
		}
		links, err := b.attach()
		if err != nil {
			return calibrationFailed(err)
		}
		// Not measured: the first calls after attaching (see above). The
		// counts are read with the programs detached only (the accounting
		// moves a thread's counts from its CPU's state to its entry at a
		// switch, and a read of both while attached can see them twice),
		// so they cover both batches: the same calls, half the runs each.
		getppidBatch()
		with := getppidBatch()
		if err := closeLinks(links); err != nil {
			return calibrationFailed(err)
		}
		timed1, runs1, err := b.counted()
		if err != nil {
			return calibrationFailed(err)
		}
		if timed1 < timed0 || runs1 < runs0 {
			return calibrationFailed(fmt.Errorf("counts went back: %d runs, %d ns to %d runs, %d ns", runs0, timed0, runs1, timed1))
		}
		none2 := getppidBatch()
		diffs = append(diffs, float64(with)-float64(none+none2)/2)
		timed += timed1 - timed0
		count += runs1 - runs0
	}
	batchRuns := count / (2 * calibRounds)
	if batchRuns*calibRounds < b.minRuns {
		return calibrationFailed(fmt.Errorf("%d program runs seen in the measured batches, want %d", batchRuns*calibRounds, b.minRuns))
	}
	sort.Float64s(diffs)
	perRun := float64(timed) / float64(count)
	excess := diffs[len(diffs)/2] / float64(batchRuns)
	est := excess - perRun
	if est <= 0 {
		return dispatchEstimate{err: fmt.Errorf("too noisy here: a run cost %.0f ns more than none, less than the %.0f ns it timed itself", excess, perRun)}
	}
	limit := b.maxNS
	if limit == 0 {
		limit = calibMaxNS
	}
	return dispatchEstimate{ns: min(uint64(est), limit)}
}

// measureHandlerDispatch measures the syscall figure with the accounting's
// sys_enter, sys_exit and sched_switch programs of backend, loaded with
// maps of their own that make this thread their only target.
func measureHandlerDispatch(backend string) dispatchEstimate {
	spec, err := accountingSpec(filterConfig{filter: filterTid, selfTgid: uint32(os.Getpid())}, byteclass.Off, false)
	if err != nil {
		return calibrationFailed(err)
	}
	// A handful of entries: one thread, a few paths.
	for _, m := range []string{"stats", "thread_infos", "threads", "targets_tgid", "targets_tid"} {
		spec.Maps[m].MaxEntries = 1024
	}
	// sched_switch too: without it a CPU that has only seen other tasks
	// keeps them as its current one, and this thread's calls there would
	// go uncounted.
	points := []string{"sys_exit", "sys_enter", "sched_switch"} // in corePoints' order
	var names []string
	for _, tp := range points {
		names = append(names, programName(backend, tp))
	}
	coll, err := loadGroup(spec, names, nil)
	if err != nil {
		return calibrationFailed(bpf.ShortError(err))
	}
	defer coll.Close()
	if err := coll.Maps["targets_tid"].Update(uint32(unix.Gettid()), uint8(1), ebpf.UpdateAny); err != nil {
		return calibrationFailed(err)
	}
	return batchPair{
		attach: func() ([]link.Link, error) {
			var links []link.Link
			for _, tp := range points {
				l, err := kernel.AttachProgram(backend, tp, coll.Programs[programName(backend, tp)])
				if err != nil {
					closeLinks(links)
					return nil, err
				}
				links = append(links, l)
			}
			return links, nil
		},
		counted: func() (uint64, uint64, error) {
			t, err := handlerTimed(coll)
			return t.ProbeNs, t.ProbeRuns, err
		},
		minRuns: 2 * calibRounds * calibCalls, // sys_enter and sys_exit
	}.measure()
}

// handlerTimed is what the handlers of coll timed so far and over how many
// runs: kept per CPU until a switch, then in the running thread's entry
// (the stats map for the system row, or once the entry is gone).
func handlerTimed(coll *ebpf.Collection) (bpf.AccountingZcCpu, error) {
	var sum bpf.AccountingZcCpu
	var cpus []bpf.AccountingZcCpu
	if err := coll.Maps["cpu_states"].Lookup(uint32(0), &cpus); err != nil {
		return sum, err
	}
	for _, c := range cpus {
		sum.ProbeNs += c.ProbeNs
		sum.ProbeRuns += c.ProbeRuns
	}
	var tid uint32
	var th bpf.AccountingZcThread
	threads := coll.Maps["threads"].Iterate()
	for threads.Next(&tid, &th) {
		sum.ProbeNs += th.Probe.Ns
		sum.ProbeRuns += th.Probe.Calls
	}
	if err := threads.Err(); err != nil {
		return sum, err
	}
	var key bpf.AccountingZcStatKey
	var vals []bpf.AccountingZcStatVal
	it := coll.Maps["stats"].Iterate()
	for it.Next(&key, &vals) {
		if taxonomy.Ctx(key.Ctx) != taxonomy.CtxProbe {
			continue
		}
		for _, v := range vals {
			sum.ProbeNs += v.Ns
			sum.ProbeRuns += v.Calls
		}
	}
	return sum, it.Err()
}

// calibCollection loads one trivial timed program of floor.bpf.c,
// following this thread alone, unattached.
func calibCollection(program string) (*ebpf.Collection, error) {
	spec, err := bpf.LoadFloor()
	if err != nil {
		return nil, err
	}
	if err := spec.Variables["calib_tid"].Set(uint32(unix.Gettid())); err != nil {
		return nil, err
	}
	for name := range spec.Programs {
		if name != program {
			delete(spec.Programs, name)
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Cache: bpf.KernelBTF})
	if err != nil {
		return nil, bpf.ShortError(err)
	}
	return coll, nil
}

// countedBy is a batchPair's counted: what coll's program timed, and its runs.
func countedBy(coll *ebpf.Collection) func() (uint64, uint64, error) {
	return func() (uint64, uint64, error) {
		c, err := floorCounts(coll)
		return c.TimedNs, c.Runs, err
	}
}

// measureHookDispatch measures the hook figure: a trivial program stays
// on sys_enter (the syscall slow path is then forced with and without),
// and the batch with adds one on sys_exit, which has none: a tracepoint's
// dispatch to its only program, as most of zcprof's feature programs are
// on their hooks (sock_send_length with io_uring sends, and
// netif_receive_skb in `run` with pinned sends, have two: the second's
// dispatch through the tracepoint's iterator costs about 20 ns more here).
func measureHookDispatch() dispatchEstimate {
	var colls [2]*ebpf.Collection
	for i, name := range []string{"calib_sys_enter", "calib_sys_exit"} {
		var err error
		if colls[i], err = calibCollection(name); err != nil {
			return calibrationFailed(err)
		}
		defer colls[i].Close()
	}
	enter, exit := colls[0], colls[1]
	links, err := attachAll(enter, nil)
	if err != nil {
		return calibrationFailed(err)
	}
	defer func() { closeLinks(links) }()
	return batchPair{
		attach:  func() ([]link.Link, error) { return attachAll(exit, nil) },
		counted: countedBy(exit),
		minRuns: calibRounds * calibCalls,
	}.measure()
}

// calibSamplePeriod is the calibrating event's period: fast enough for
// its samples to stand out of a batch's noise on a host where they are
// cheap, as a cpu-clock event allows (10 µs at least).
const calibSamplePeriod = 100_000 // ns

// measureSampleDispatch measures the sample figure: the calibrating
// thread's batches with a cpu-clock event of its own running calib_sample
// (floor.bpf.c), a trivial timed program.
func measureSampleDispatch() dispatchEstimate {
	coll, err := calibCollection("calib_sample")
	if err != nil {
		return calibrationFailed(err)
	}
	defer coll.Close()
	return batchPair{
		attach: func() ([]link.Link, error) {
			l, err := attachThreadClock(coll.Programs["calib_sample"], calibSamplePeriod)
			if err != nil {
				return nil, err
			}
			return []link.Link{l}, nil
		},
		counted: countedBy(coll),
		minRuns: calibRounds * 10, // a sample in 3 ms of CPU at the least
		maxNS:   calibSamplePeriod / 2,
	}.measure()
}

// eventLink is a program's link to a perf event and the event, closed
// after it.
type eventLink struct {
	link.Link
	fd int
}

func (l eventLink) Close() error {
	return errors.Join(l.Link.Close(), unix.Close(l.fd))
}

// attachThreadClock opens a cpu-clock event on this thread with period (in
// ns) and attaches prog to it.
func attachThreadClock(prog *ebpf.Program, period uint64) (link.Link, error) {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample: period,
	}
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("perf_event_open(cpu-clock, this thread): %w", err)
	}
	l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("attach to cpu-clock event: %w", err)
	}
	return eventLink{l, fd}, nil
}

// attachAll attaches every program of coll, after links (closed on error).
func attachAll(coll *ebpf.Collection, links []link.Link) ([]link.Link, error) {
	for _, p := range coll.Programs {
		l, err := link.AttachTracing(link.TracingOptions{Program: p})
		if err != nil {
			closeLinks(links)
			return nil, err
		}
		links = append(links, l)
	}
	return links, nil
}

// getppidBatch is this thread's CPU time for calibCalls getppid() calls.
func getppidBatch() uint64 {
	var a, b unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &a)
	for i := 0; i < calibCalls; i++ {
		unix.Getppid()
	}
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &b)
	return uint64(b.Nano() - a.Nano())
}

// floorCounts sums over CPUs the runs coll's program counted.
func floorCounts(coll *ebpf.Collection) (bpf.FloorFloorCount, error) {
	var sum bpf.FloorFloorCount
	var perCPU []bpf.FloorFloorCount
	if err := coll.Maps["floor_runs"].Lookup(uint32(0), &perCPU); err != nil {
		return sum, err
	}
	for _, c := range perCPU {
		sum.Runs += c.Runs
		sum.TimedNs += c.TimedNs
	}
	return sum, nil
}

func closeLinks(links []link.Link) error {
	var errs []error
	for _, l := range links {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}
