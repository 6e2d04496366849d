package profiler

import "github.com/zcprof/zcprof/profiler/report"

// Extension is a feature attached beside the accounting (an attribution
// backend, see profiler/attrib): it takes its own reading next to each
// Snapshot and adds its figures to each document built from two of them.
type Extension interface {
	// Read returns the extension's cumulative counters now.
	Read() (any, error)
	// Annotate adds the extension's figures for iv (prev nil: since it
	// started) to a document built from iv.
	Annotate(d *report.Document, iv Interval, prev, cur any)
	Close() error
}

// ExtensionFunc attaches an extension to an open session.
type ExtensionFunc func(*Session) (Extension, error)

// extReadings is one reading per extension, taken with a snapshot.
type extReadings []any

func readExtensions(exts []Extension) (extReadings, error) {
	out := make(extReadings, len(exts))
	for i, e := range exts {
		r, err := e.Read()
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

func annotate(exts []Extension, d *report.Document, iv Interval, prev, cur extReadings) {
	for i, e := range exts {
		var p any
		if prev != nil {
			p = prev[i]
		}
		e.Annotate(d, iv, p, cur[i])
	}
}
