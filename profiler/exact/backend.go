package exact

import (
	"errors"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/report"
)

// Sampled is a sampling backend running beside the exact one, for the
// copy shares inside exact callers (distro kernels: the copy routines
// cannot be attached on distro kernels).
type Sampled struct {
	Backend attrib.Backend
	// Stacks turns two of its readings (prev nil: since start) into folded
	// kernel stacks with sample counts, per accounting key.
	Stacks func(prev, cur attrib.Reading) map[profiler.Key]map[string]uint64
	// Classify is its stack rule: folded stack -> category.
	Classify func(stack string) string
}

// Backend is the function-exact attribution backend (attrib.Backend).
type Backend struct {
	tracer  *Tracer
	sampled *Sampled
	// ownSampler: the sampler was started for this backend; Close closes it.
	ownSampler bool
	// noShares says why no sampler runs for the copy shares ("" if one does).
	noShares string
}

var _ attrib.Backend = (*Backend)(nil)

// NewBackend wraps an attached tracer; sampled may be nil (then a caller
// whose copy routine is refused keeps the copy in its own category, and
// the output says so).
func NewBackend(t *Tracer, sampled *Sampled) *Backend {
	return &Backend{tracer: t, sampled: sampled}
}

// Tracer is the attached tracer.
func (b *Backend) Tracer() *Tracer { return b.tracer }

// Name is "fentry" or "kprobe".
func (b *Backend) Name() string { return b.tracer.Mode() }

// Reading is the backend's cumulative counters, with the sampler's reading
// taken next to them.
type Reading struct {
	mode    string
	FX      *Snapshot
	Samples attrib.Reading
}

// Backend implements attrib.Reading.
func (r *Reading) Backend() string { return r.mode }

// SampledPart implements attrib.Sampled: the copy-share sampler's reading.
func (r *Reading) SampledPart() *attrib.Samples {
	s, _ := r.Samples.(*attrib.Samples)
	return s
}

// Read implements attrib.Backend.
func (b *Backend) Read() (attrib.Reading, error) {
	fx, err := b.tracer.Snapshot()
	if err != nil {
		return nil, err
	}
	r := &Reading{mode: b.tracer.Mode(), FX: fx}
	if b.sampled != nil {
		if r.Samples, err = b.sampled.Backend.Read(); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Categories implements attrib.Backend: each key with traced calls in the
// interval, split by Split.
func (b *Backend) Categories(iv profiler.Interval, prev, cur attrib.Reading) map[profiler.Key][]report.Category {
	c, ok := cur.(*Reading)
	if !ok || c == nil {
		return nil
	}
	var p *Reading
	if pr, ok := prev.(*Reading); ok {
		p = pr
	}
	var prevFX *Snapshot
	var prevSamples attrib.Reading
	if p != nil {
		prevFX, prevSamples = p.FX, p.Samples
	}
	d := Delta(prevFX, c.FX)
	var stacks map[profiler.Key]map[string]uint64
	if b.sampled != nil && c.Samples != nil {
		stacks = b.sampled.Stacks(prevSamples, c.Samples)
	}
	return splitInterval(iv, d, b.tracer.IsAttached, stacks, b.classify())
}

func (b *Backend) classify() func(string) string {
	if b.sampled == nil || b.sampled.Classify == nil {
		return nil
	}
	return b.sampled.Classify
}

// splitInterval groups the function deltas by accounting key and splits
// each key's exact time.
func splitInterval(iv profiler.Interval, d *Snapshot, attached func(uint8) bool,
	stacks map[profiler.Key]map[string]uint64, classify func(string) string) map[profiler.Key][]report.Category {
	byKey := map[profiler.Key]map[uint8]Stat{}
	for k, s := range d.Stats {
		if byKey[k.Key] == nil {
			byKey[k.Key] = map[uint8]Stat{}
		}
		byKey[k.Key][k.Func] = byKey[k.Key][k.Func].add(s)
	}
	totals := keyTotals(iv)
	out := map[profiler.Key][]report.Category{}
	for key, stats := range byKey {
		in := KeyInput{TotalNS: totals[key], Stats: stats, Attached: attached}
		if classify != nil && stacks != nil {
			in.Shares = CopyShares(stacks[key], attached, classify)
		}
		if cats := Split(in); len(cats) > 0 {
			out[key] = cats
		}
	}
	return out
}

// keyTotals is the accounting's exact time of every key of the interval.
func keyTotals(iv profiler.Interval) map[profiler.Key]uint64 {
	out := map[profiler.Key]uint64{}
	for _, td := range iv.Threads {
		for pc, c := range td.Counters {
			out[profiler.Key{Gen: td.Info.Gen, Path: pc.Path, Ctx: pc.Ctx}] += c.NS
		}
	}
	for pc, c := range iv.System {
		out[profiler.Key{Gen: 0, Path: pc.Path, Ctx: pc.Ctx}] += c.NS
	}
	return out
}

// Unavailable implements attrib.Backend: every function that is not
// traced ("function/<name>"), with the kernel's reason and what stands in
// for it; and what the sampler for the copy shares could not provide.
func (b *Backend) Unavailable() map[string]string {
	out := map[string]string{}
	for name, why := range b.tracer.Unavailable() {
		out["function/"+name] = why + "; " + b.instead(name)
	}
	if b.sampled != nil && b.sampled.Backend != nil {
		for k, v := range b.sampled.Backend.Unavailable() {
			out[k] = v
		}
	}
	if b.noShares != "" {
		out["copy share"] = b.noShares
	}
	if why := b.tracer.noMissedCounts; why != "" {
		out[unavailableKprobeMissed] = why
	}
	return out
}

// instead says what covers a function that is not traced.
func (b *Backend) instead(name string) string {
	for _, c := range copyInside {
		routine, _ := ByID(c.routine)
		caller, _ := ByID(c.caller)
		if routine.Name != name {
			continue
		}
		if b.sampled != nil {
			return c.category + " inside " + caller.Name + " = its exact self time x the sampled copy share (estimate with a 95% interval)"
		}
		return c.category + " stays inside " + caller.Name + "'s category: no sampler runs for the share"
	}
	return "its time stays in its traced callers"
}

// Close implements attrib.Backend. A sampler passed to NewBackend is its
// owner's to close; one the starter started is closed here.
func (b *Backend) Close() error {
	err := b.tracer.Close()
	if b.ownSampler && b.sampled != nil {
		err = errors.Join(err, b.sampled.Backend.Close())
		b.ownSampler = false
	}
	return err
}
