package attrib

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// Stack names for samples without a kernel stack.
const (
	StackUser    = "[user]"    // the sample interrupted user mode
	StackUnknown = "[unknown]" // kernel mode, but the unwinder returned nothing
	// FrameRepMovs is the pseudo-frame beneath a sample taken in a rep movs
	// instruction: a copy inlined into the function above it (FSRM CPUs
	// inline copy_user_generic as rep movsb).
	FrameRepMovs = "[rep_movs]"
)

// Sample kinds (enum zc_sample_kind).
const (
	kindKernel  = 0
	kindUser    = 1
	kindNoStack = 2
	kindRepMovs = 3
	kindEarly   = 0x10 // ZC_SAMPLE_EARLY, or-ed in
)

// StackKey is one sampled stack in one accounting context.
type StackKey struct {
	Key   profiler.Key
	Stack string // folded: frames root first, ";"-separated
}

// LeafKey is one sampled leaf (the interrupted function, or StackUser) in
// one accounting context.
type LeafKey struct {
	Key  profiler.Key
	Leaf string
}

// Samples is a cumulative reading of the sampler: the leaf of every target
// sample (phase one), and the full stacks of a random subsample of them
// (phase two, one in UnwindEvery(hz)).
type Samples struct {
	Leaves map[LeafKey]uint64
	Counts map[StackKey]uint64
	// EarlyLeaves and EarlyCounts are the target samples a hypervisor
	// delivered early, at an exit (struct zc_timer in bpf/sampler.h), kept
	// out of Leaves and Counts: they would bill the work that ran when the
	// timer fell due to the code that exited. WithEarly puts them back.
	EarlyLeaves map[LeafKey]uint64
	EarlyCounts map[StackKey]uint64
	// UsualLatenessNS is the CPUs' usual sample lateness (mean of their
	// running 75th percentiles).
	UsualLatenessNS uint64
	// Total counts every sample on every CPU; SystemTask the samples of
	// non-target task context (idle loop, other tasks), which are counted
	// but not unwound; Dropped the samples lost to a full map; NoStack
	// kernel samples the unwinder could not walk; Unwound the target
	// samples given a full unwind; Skipped the timer periods, on any CPU,
	// that gave no sample because the timer ran a period or more late;
	// Crossed the samples set aside because they fell due before the
	// task they interrupted was switched in (the timer interrupt waited
	// through the switch): they stand for another task's time.
	Total, SystemTask, Dropped, NoStack, Unwound, Skipped, Crossed uint64
	// LeafLag is how many samples bound for Leaves (every sample but the
	// SystemTask and Crossed ones) the counters gained while Leaves was
	// being read (counters read before and after it, readCounters): the
	// counters, read after, are ahead of Leaves by at most this plus one
	// sample in flight per CPU, and never behind it. In a difference
	// (Sub), LeafLagBefore is the earlier reading's.
	LeafLag, LeafLagBefore uint64
}

// leafBound counts the samples that go to Leaves (Dropped ones aside).
func (s *Samples) leafBound() uint64 { return s.Total - s.SystemTask - s.Crossed }

// Backend implements Reading.
func (*Samples) Backend() string { return kernel.Sampling }

// Sub returns a - b (b nil: a itself).
func (a *Samples) Sub(b *Samples) *Samples {
	if b == nil {
		return a
	}
	out := &Samples{UsualLatenessNS: a.UsualLatenessNS, Total: a.Total - b.Total, SystemTask: a.SystemTask - b.SystemTask,
		Dropped: a.Dropped - b.Dropped, NoStack: a.NoStack - b.NoStack, Unwound: a.Unwound - b.Unwound, Skipped: a.Skipped - b.Skipped,
		Crossed: a.Crossed - b.Crossed, LeafLag: a.LeafLag, LeafLagBefore: b.LeafLag}
	out.Leaves = subCounts(a.Leaves, b.Leaves)
	out.Counts = subCounts(a.Counts, b.Counts)
	out.EarlyLeaves = subCounts(a.EarlyLeaves, b.EarlyLeaves)
	out.EarlyCounts = subCounts(a.EarlyCounts, b.EarlyCounts)
	return out
}

// subCounts is a - b for cumulative counters.
func subCounts[K comparable](a, b map[K]uint64) map[K]uint64 {
	out := map[K]uint64{}
	for k, n := range a {
		if n > b[k] { // unsigned: n - b[k] would wrap where b has more
			out[k] = n - b[k]
		}
	}
	return out
}

// WithEarly is s with the early samples counted like the others: what the
// categories would be without setting them aside.
func (s *Samples) WithEarly() *Samples {
	out := *s
	out.Leaves, out.Counts = map[LeafKey]uint64{}, map[StackKey]uint64{}
	out.EarlyLeaves, out.EarlyCounts = nil, nil
	for _, m := range []map[LeafKey]uint64{s.Leaves, s.EarlyLeaves} {
		for k, n := range m {
			out.Leaves[k] += n
		}
	}
	for _, m := range []map[StackKey]uint64{s.Counts, s.EarlyCounts} {
		for k, n := range m {
			out.Counts[k] += n
		}
	}
	return &out
}

// Read implements Backend.
func (s *Sampler) Read() (Reading, error) { return s.Collect() }

// Collect reads every sample so far, symbolized.
func (s *Sampler) Collect() (*Samples, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("sampler closed")
	}
	out := &Samples{Leaves: map[LeafKey]uint64{}, Counts: map[StackKey]uint64{},
		EarlyLeaves: map[LeafKey]uint64{}, EarlyCounts: map[StackKey]uint64{}}
	var (
		lk bpf.SamplerZcLeafKey
		k  bpf.SamplerZcSampleKey
		n  uint64
	)
	// The counters before and after Leaves bound what Leaves holds.
	var before Samples
	if err := s.readCounters(&before, false); err != nil {
		return nil, err
	}
	lit := s.coll.Maps["leaves"].Iterate()
	for lit.Next(&lk, &n) {
		key := LeafKey{Key: profiler.Key{Gen: lk.Gen, Path: taxonomy.Path(lk.Path), Ctx: taxonomy.Ctx(lk.Ctx)}}
		switch lk.Kind {
		case kindUser:
			key.Leaf = StackUser
		case kindRepMovs:
			key.Leaf = FrameRepMovs
		default:
			key.Leaf = s.leafName(lk.Ip)
		}
		if lk.Early != 0 {
			out.EarlyLeaves[key] += n
		} else {
			out.Leaves[key] += n
		}
	}
	if err := lit.Err(); err != nil && !errors.Is(err, ebpf.ErrIterationAborted) {
		return nil, fmt.Errorf("read sampled leaves: %w", err)
	}
	if err := s.readCounters(out, true); err != nil {
		return nil, err
	}
	out.LeafLag = out.leafBound() - min(out.leafBound(), before.leafBound())
	it := s.coll.Maps["samples"].Iterate()
	for it.Next(&k, &n) {
		early := k.Kind&kindEarly != 0
		k.Kind &^= kindEarly
		sk := StackKey{Key: profiler.Key{Gen: k.Gen, Path: taxonomy.Path(k.Path), Ctx: taxonomy.Ctx(k.Ctx)}}
		switch {
		case k.Kind == kindUser:
			sk.Stack = StackUser
		case k.Kind == kindNoStack || k.Nframes == 0:
			sk.Stack = StackUnknown
		case k.Kind == kindRepMovs:
			sk.Stack = s.fold(k.Ips) + ";" + FrameRepMovs
		default:
			sk.Stack = s.fold(k.Ips)
		}
		if early {
			out.EarlyCounts[sk] += n
		} else {
			out.Counts[sk] += n
		}
	}
	if err := it.Err(); err != nil && !errors.Is(err, ebpf.ErrIterationAborted) {
		return nil, fmt.Errorf("read samples: %w", err)
	}
	var timers []bpf.SamplerZcTimer
	if err := s.coll.Maps["timers"].Lookup(uint32(0), &timers); err != nil {
		return nil, fmt.Errorf("read sample timers: %w", err)
	}
	var refs, cpus uint64
	for _, t := range timers {
		if t.Ref > 0 {
			refs += t.Ref
			cpus++
		}
	}
	if cpus > 0 {
		out.UsualLatenessNS = refs / cpus
	}
	return out, nil
}

// readCounters reads the sampler's counters (Total ... Crossed) into out,
// one after the other while the CPUs go on counting. A sample counts
// Total first, then one of SystemTask, Crossed or its leaf. So Total read
// first, the others after, gives at most one sample per CPU more than the
// leaves then held (one in flight); Total read last gives never fewer.
func (s *Sampler) readCounters(out *Samples, totalLast bool) error {
	dsts := []*uint64{&out.Total, &out.SystemTask, &out.Dropped, &out.NoStack, &out.Unwound, &out.Skipped, &out.Crossed}
	order := []int{0, 1, 2, 3, 4, 5, 6} // the ZC_STAT_* keys
	if totalLast {
		order = []int{1, 2, 3, 4, 5, 6, 0}
	}
	var perCPU []uint64
	for _, i := range order {
		if err := s.coll.Maps["sampler_stats"].Lookup(uint32(i), &perCPU); err != nil {
			return fmt.Errorf("read sampler stats: %w", err)
		}
		*dsts[i] = 0
		for _, v := range perCPU {
			*dsts[i] += v
		}
	}
	return nil
}

// leafName symbolizes a sampled instruction as fold names a stack's
// innermost frame (StackUnknown for none).
func (s *Sampler) leafName(ip uint64) string {
	if ip == 0 {
		return StackUnknown
	}
	if f, ok := s.leafCache[ip]; ok {
		return f
	}
	f := s.syms.Name(ip)
	s.leafCache[ip] = f
	return f
}

// fold symbolizes a stack (innermost first, zero-terminated) into folded
// form, root first. Return addresses are looked up one byte back, so that
// a call that ends a function is not blamed on the next one.
func (s *Sampler) fold(ips [64]uint64) string {
	if f, ok := s.cache[ips]; ok {
		return f
	}
	n := 0
	for n < len(ips) && ips[n] != 0 {
		n++
	}
	names := make([]string, n)
	for i := 0; i < n; i++ {
		addr := ips[i]
		if i > 0 {
			addr--
		}
		names[n-1-i] = s.syms.Name(addr)
	}
	f := strings.Join(names, ";")
	s.cache[ips] = f
	return f
}

// Stacks returns the folded stacks sampled between two readings (prev nil:
// since start), per accounting key: what the function-exact backend needs
// to split a caller's own time when its copy routine cannot be attached.
func (s *Sampler) Stacks(prev, cur Reading) map[profiler.Key]map[string]uint64 {
	c, ok := cur.(*Samples)
	if !ok || c == nil {
		return nil
	}
	p, _ := prev.(*Samples)
	out := map[profiler.Key]map[string]uint64{}
	for k, n := range c.Sub(p).Counts {
		if out[k.Key] == nil {
			out[k.Key] = map[string]uint64{}
		}
		out[k.Key][k.Stack] += n
	}
	return out
}
