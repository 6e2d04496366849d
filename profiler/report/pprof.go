package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/google/pprof/profile"
)

// WritePprof writes the document's weighted stacks as a gzipped pprof
// profile: sample types "samples" (count) and "cpu" (nanoseconds, the
// exact time each stack stands for), labels process, side, cell, path and
// category, so that `go tool pprof -top` and Pyroscope/Parca open it.
// Kernel frames have names only (no addresses, no files).
func WritePprof(w io.Writer, d *Document) error {
	p := Pprof(d)
	if err := p.CheckValid(); err != nil {
		return fmt.Errorf("pprof: %v", err)
	}
	return p.Write(w)
}

// Pprof builds the profile of WritePprof.
func Pprof(d *Document) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		// Exact time, scaled: no single period applies.
		Period:            1,
		DurationNanos:     int64(d.DurationNS),
		DefaultSampleType: "cpu",
		Comments:          []string{"zcprof " + d.Command + ": kernel stacks sampled, values are exact CPU ns x sample share (" + d.Backends.Attribution + ")"},
	}
	funcs := map[string]*profile.Function{}
	locs := map[string]*profile.Location{}
	loc := func(name string) *profile.Location {
		if l, ok := locs[name]; ok {
			return l
		}
		f := &profile.Function{ID: uint64(len(funcs) + 1), Name: name, SystemName: name}
		funcs[name] = f
		p.Function = append(p.Function, f)
		l := &profile.Location{ID: uint64(len(locs) + 1), Line: []profile.Line{{Function: f}}}
		locs[name] = l
		p.Location = append(p.Location, l)
		return l
	}
	for _, st := range d.Stacks {
		ns := int64(math.Round(st.NS))
		if ns == 0 {
			continue
		}
		s := &profile.Sample{Value: []int64{int64(st.Samples), ns}, Label: map[string][]string{}}
		for i := len(st.Frames) - 1; i >= 0; i-- { // leaf first
			s.Location = append(s.Location, loc(st.Frames[i]))
		}
		for k, v := range map[string]string{"process": st.Process, "side": st.Side, "cell": st.Cell,
			"path": st.Path, "category": st.Category} {
			if v != "" {
				s.Label[k] = []string{v}
			}
		}
		if st.PID != 0 {
			s.NumLabel = map[string][]int64{"pid": {int64(st.PID)}}
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}

// WriteFolded writes the weighted stacks in folded form (flamegraph.pl,
// speedscope, inferno): one line per stack, "frame;frame;... value" with
// the value in CPU nanoseconds. The root frames are the process (and the
// cell and side of a run), then the path, so that a flame graph splits by
// them first. Lines are sorted for stable output.
func WriteFolded(w io.Writer, d *Document) error {
	agg := map[string]float64{}
	for _, st := range d.Stacks {
		var pre []string
		if st.Cell != "" {
			pre = append(pre, st.Cell)
		}
		if st.Side != "" {
			pre = append(pre, st.Side)
		} else if st.Process != "" {
			pre = append(pre, st.Process)
		}
		pre = append(pre, st.Path)
		frames := append(pre, st.Frames...)
		for i, f := range frames {
			// ';' separates frames and a space ends them.
			frames[i] = strings.NewReplacer(";", ":", " ", "_").Replace(f)
		}
		agg[strings.Join(frames, ";")] += st.NS
	}
	keys := make([]string, 0, len(agg))
	for k := range agg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		if v := int64(math.Round(agg[k])); v > 0 {
			fmt.Fprintf(&b, "%s %d\n", k, v)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
