package attrib

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/ksym"
)

// DefaultHz is the default sampling rate per CPU where a sample is cheap
// (AutoHz lowers it where it is not). A prime rate avoids
// sampling in lockstep with the 250 Hz tick.
//
// A kernel stack unwind costs 10-15 µs on our PVM guests (most of it in
// the first frames, BenchmarkSamplingOverhead), so unwinding every sample
// at a rate that gives ±5% on a third of a path in a few seconds (about
// 3,000 Hz) would cost 4% of a busy CPU. Sampling is two-phase instead:
// every sample records only its leaf (the interrupted function, ~1.4 µs),
// and one in UnwindEvery(hz) is unwound. The leaf alone decides most
// categories (a copy routine in tx.write is copy.tx); the unwound
// subsample gives each leaf's category mix where it does not (the
// interrupt-enable pile-ups), see twoPhase. The timer interrupts
// themselves cost the workload far more than the program on PVM guests
// (README, "Inside each path").
const DefaultHz = 2999

// SampleBudget is the share of a busy CPU the default rate's timer
// interrupts may cost (what a sample costs beyond its program,
// profiler.SampleDispatchNS): where a sample is dear, as on our PVM
// guests (20-29 µs), the default rate is lower than DefaultHz. It was 2%,
// which put those guests' 999 Hz at 999 × 20 µs, inside the estimate's
// spread between runs: the default rate flipped between 999 and 499 Hz
// from one run to the next (4 runs: 499, 999, 499, 499), and two runs of
// one kernel were sampled differently.
const SampleBudget = 0.015

// autoRates are the default rates, highest first: none divides the 250 or
// 1000 Hz tick.
var autoRates = []int{DefaultHz, 1999, 999, 499, 199}

// AutoHz is the default rate where one sample costs sampleNS beyond its
// program: the highest of autoRates within SampleBudget, else the lowest.
func AutoHz(sampleNS uint64) int {
	for _, hz := range autoRates {
		if float64(hz)*float64(sampleNS) <= SampleBudget*1e9 {
			return hz
		}
	}
	return autoRates[len(autoRates)-1]
}

// UnwindHz bounds the full unwinds per second per CPU: about 0.5% of a busy
// CPU here.
const UnwindHz = 333

// UnwindEvery is how many target samples there are per full unwind at hz
// (1: every sample is unwound), so that at most UnwindHz a second are.
// Rounded up: rounded to the nearest, 499 Hz (the default on our guests)
// unwound every sample, 499 a second at 10-15 µs each.
func UnwindEvery(hz int) int { return max(1, (hz+UnwindHz-1)/UnwindHz) }

// Sampler is the sampling attribution backend: a cpu-clock perf event per
// online CPU, each with the zc_sample program attached.
type Sampler struct {
	hz int
	// dispatchNS is what a sample costs beyond the program, counted per
	// sample as probe time (profiler.SampleDispatchNS).
	dispatchNS uint64
	syms       *ksym.Table
	coll       *ebpf.Collection
	prog       *ebpf.Program

	links    []link.Link
	fds      []int
	rephaser *rephaser

	unavailable map[string]string

	mu        sync.Mutex
	cache     map[[64]uint64]string // ips -> folded stack
	leafCache map[uint64]string     // ip -> function
	closed    bool
}

// FullStackHz is the default rate of a sampler that unwinds every sample
// (StartUnwindingAll): about 0.6% of a busy CPU here.
const FullStackHz = 499

// Start loads the sampler against sess's accounting maps and starts
// two-phase sampling of every online CPU at hz. Stop it with Close.
func Start(sess *profiler.Session, hz int) (*Sampler, error) {
	return start(sess, hz, UnwindEvery(hz))
}

// StartUnwindingAll is Start with every sample unwound, for users of the
// stacks' ancestry (the function-exact backend's copy share inside an
// exact caller), which the leaves do not carry.
func StartUnwindingAll(sess *profiler.Session, hz int) (*Sampler, error) {
	return start(sess, hz, 1)
}

func start(sess *profiler.Session, hz, every int) (*Sampler, error) {
	if err := checkHz(hz); err != nil {
		return nil, err
	}
	syms, err := ksym.Read()
	if err != nil {
		return nil, fmt.Errorf("kernel symbols: %w", err)
	}
	if err := syms.Addressable(); err != nil {
		return nil, err
	}
	cpus, err := kernel.OnlineCPUs()
	if err != nil {
		return nil, fmt.Errorf("online CPUs: %w", err)
	}
	spec, err := bpf.LoadSampler()
	if err != nil {
		return nil, fmt.Errorf("load sampler spec: %w", err)
	}
	if err := profiler.SetHookDispatch(spec); err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	if err := preallocateSamples(spec, kernel.ReadHost().PreemptRT); err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	repl, err := sess.SharedMaps(spec)
	if err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	// What a sample costs beyond the program is zcprof's time too; the
	// session says when it could not be measured.
	sampleNS, sampleErr := profiler.SampleDispatchNS()
	if err := spec.Variables["cfg_sample_dispatch_ns"].Set(sampleNS); err != nil {
		return nil, fmt.Errorf("sampler: set cfg_sample_dispatch_ns: %w", err)
	}
	if err := spec.Variables["unwind_every"].Set(uint32(every)); err != nil {
		return nil, fmt.Errorf("sampler: set unwind_every: %w", err)
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: repl, Cache: bpf.KernelBTF})
	if err != nil {
		return nil, fmt.Errorf("load sampler: %w", err)
	}
	s := &Sampler{hz: hz, dispatchNS: sampleNS, syms: syms, coll: coll, prog: coll.Programs["zc_sample"],
		unavailable: map[string]string{}, cache: map[[64]uint64]string{}, leafCache: map[uint64]string{}}
	if sampleErr != nil {
		s.unavailable["sample dispatch calibration"] = fmt.Sprintf("probe time leaves out each sample's timer interrupt: %v", sampleErr)
	}
	for _, cpu := range cpus {
		if err := s.attach(cpu); err != nil {
			s.Close()
			return nil, err
		}
	}
	s.rephaser = startRephasing(s.fds, s.periodNS())
	sess.TrackPrograms(s.prog)
	if reason := pmuUnavailable(); reason != "" {
		s.unavailable["pmu"] = reason
	}
	return s, nil
}

// preallocateSamples preallocates the maps samples are counted in. They
// are inserted into from the cpu-clock hrtimer's interrupt, where a map
// allocated at insert draws on the BPF allocator's per-CPU cache, refilled
// by irq_work: at once on return from the interrupt, but on PREEMPT_RT from
// a thread that the busy CPU may not run before its next samples (a 6.12-rt
// guest refused 6 of 3,238 leaves in one CI run). The leaves (5.8 MB) are
// preallocated everywhere; the unwound stacks, 592 bytes an entry (38.8 MB
// in all), only where the refill is a thread.
func preallocateSamples(spec *ebpf.CollectionSpec, preemptRT bool) error {
	maps := []string{"leaves"}
	if preemptRT {
		maps = append(maps, "samples")
	}
	for _, name := range maps {
		fits, err := bpf.Preallocate(spec.Maps[name])
		if err != nil {
			return err
		}
		if !fits {
			return fmt.Errorf("preallocate %s: %d entries exceed %d MiB", name, spec.Maps[name].MaxEntries, bpf.PreallocBudget>>20)
		}
	}
	return nil
}

// attach opens a cpu-clock event on cpu with a fixed period (each sample
// stands for the same CPU time) and attaches the program to it.
func (s *Sampler) attach(cpu int) error {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample: s.periodNS(),
	}
	fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("perf_event_open(cpu-clock, cpu %d): %w", cpu, err)
	}
	s.fds = append(s.fds, fd)
	l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: s.prog, Attach: ebpf.AttachPerfEvent})
	if err != nil {
		return fmt.Errorf("attach sampler to cpu %d: %w", cpu, err)
	}
	s.links = append(s.links, l)
	return nil
}

// periodNS is the cpu-clock events' period: each sample stands for it.
func (s *Sampler) periodNS() uint64 { return uint64(1e9 / s.hz) }

// checkHz bounds the rate by the kernel's perf_event_max_sample_rate.
func checkHz(hz int) error {
	limit := 100000
	if v, err := strconv.Atoi(kernel.Sysctl("kernel.perf_event_max_sample_rate")); err == nil && v > 0 {
		limit = v
	}
	if hz < 1 || hz > limit {
		return fmt.Errorf("--sample-hz %d: must be between 1 and %d (kernel.perf_event_max_sample_rate)", hz, limit)
	}
	return nil
}

// Name implements Backend.
func (s *Sampler) Name() string { return kernel.Sampling }

// Hz is the sampling rate per CPU.
func (s *Sampler) Hz() int { return s.hz }

// Unavailable implements Backend.
func (s *Sampler) Unavailable() map[string]string { return s.unavailable }

// ProgramID is the kernel id of the sampling program (0 if unknown).
func (s *Sampler) ProgramID() uint32 {
	if info, err := s.prog.Info(); err == nil {
		if id, ok := info.ID(); ok {
			return uint32(id)
		}
	}
	return 0
}

// Close detaches the program from every CPU and closes the perf events and
// maps. Links go first, then the perf fds they hold.
func (s *Sampler) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.rephaser != nil {
		s.rephaser.close()
	}
	var errs []error
	for _, l := range s.links {
		errs = append(errs, l.Close())
	}
	for _, fd := range s.fds {
		errs = append(errs, unix.Close(fd))
	}
	s.links, s.fds = nil, nil
	if s.coll != nil {
		s.coll.Close()
	}
	return errors.Join(errs...)
}
