package attrib

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/report"
)

// Options choose and tune the attribution backend (--backend, --sample-hz).
type Options struct {
	Backend  string // "auto" (default), "sampling", "fentry", "kprobe" or "none"
	SampleHz int    // 0: AutoHz of this machine's cost per sample
}

// Starter attaches one backend to a session.
type Starter func(sess *profiler.Session, o Options) (Backend, error)

// Rung is one backend Open may start: its name (kernel.AttributionLadder)
// and how. The caller hands Open the rungs it has, in the ladder's order
// (profiler/backends wires them all); this package cannot import the
// function-exact backend, which imports it.
type Rung struct {
	Name  string
	Start Starter
}

// SamplingRung is the sampling backend, the ladder's last rung.
func SamplingRung() Rung {
	return Rung{Name: kernel.Sampling, Start: func(sess *profiler.Session, o Options) (Backend, error) {
		hz := o.SampleHz
		if hz == 0 {
			ns, _ := profiler.SampleDispatchNS() // 0 when unmeasured: DefaultHz
			hz = AutoHz(ns)
		}
		return Start(sess, hz)
	}}
}

// Open starts the requested backend out of rungs. auto walks the rungs in
// order and records why each one above the one it took failed; a backend
// that was asked for by name fails with a one-line error. "none" returns
// nil.
func Open(sess *profiler.Session, o Options, rungs []Rung) (Backend, map[string]string, error) {
	skipped := map[string]string{}
	name := o.Backend
	switch name {
	case "", kernel.Auto:
	case kernel.None:
		return nil, skipped, nil
	default:
		if err := kernel.Choose("--backend", "", name, kernel.AttributionChoices()); err != nil {
			return nil, skipped, err
		}
		i := slices.IndexFunc(rungs, func(r Rung) bool { return r.Name == name })
		if i < 0 {
			return nil, skipped, fmt.Errorf("--backend %s: not available in this build", name)
		}
		b, err := rungs[i].Start(sess, o)
		if err != nil {
			return nil, skipped, fmt.Errorf("--backend %s: %v", name, err)
		}
		return b, skipped, nil
	}
	var why []string
	for _, rung := range rungs {
		b, err := rung.Start(sess, o)
		if err == nil {
			return b, skipped, nil
		}
		skipped[rung.Name] = oneLine(err)
		why = append(why, rung.Name+": "+skipped[rung.Name])
	}
	return nil, skipped, fmt.Errorf("no attribution backend could attach (%s)", strings.Join(why, "; "))
}

func oneLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// Extension returns a profiler.ExtensionFunc that opens the backend o asks
// for out of rungs (as Open) and fills each document's categories,
// backends.attribution and backends.unavailable. With "none" it only says
// that attribution is off.
func Extension(o Options, rungs []Rung) profiler.ExtensionFunc {
	return func(sess *profiler.Session) (profiler.Extension, error) {
		b, skipped, err := Open(sess, o, rungs)
		if err != nil {
			return nil, err
		}
		return &extension{b: b, skipped: skipped}, nil
	}
}

// Annotator is what a Backend may add beyond categories (the exact
// backend's per-function figures), for documents built from iv.
type Annotator interface {
	AnnotateDocument(d *report.Document, iv profiler.Interval, prev, cur Reading)
}

// EntryAnnotator is Annotator for one entry built from some threads of an
// interval (the sides of a `zcprof run` cell).
type EntryAnnotator interface {
	AnnotateEntry(p *report.Process, threads []profiler.ThreadDelta, prev, cur Reading)
}

// Warner is a Backend that can say what it failed to measure between two
// readings (the exact backend: calls the kernel skipped); Annotate adds
// its warnings to the document.
type Warner interface {
	Warnings(prev, cur Reading) []string
}

type extension struct {
	b       Backend
	skipped map[string]string
}

func (e *extension) Read() (any, error) {
	if e.b == nil {
		return nil, nil
	}
	return e.b.Read()
}

func (e *extension) Annotate(d *report.Document, iv profiler.Interval, prev, cur any) {
	if e.b == nil {
		d.Backends.Unavailable["attribution"] = "turned off (--backend none)"
		return
	}
	p, _ := prev.(Reading)
	c, _ := cur.(Reading)
	cats := e.b.Categories(iv, p, c)
	FillProcesses(d.Processes, iv, cats)
	FillSystem(d.System, cats)
	if a, ok := e.b.(Annotator); ok {
		a.AnnotateDocument(d, iv, p, c)
	}
	if st, ok := e.b.(Stacker); ok {
		d.Stacks = WeightedStacks(iv, st.Stacks(p, c), ByProcess, true)
	}
	Annotate(d, e.b, p, c)
	for k, v := range e.skipped {
		d.Backends.Unavailable[k] = v
	}
}

func (e *extension) Close() error {
	if e.b == nil {
		return nil
	}
	return e.b.Close()
}
