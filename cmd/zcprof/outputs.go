package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/report/html"
)

// outputs are the renderings `run` and `profile` share: the document
// (table, --json or --csv) on stdout or in -o FILE, and any number of
// files. Every file is opened before anything is measured (open), so a
// path that cannot be written fails at once, not after the run.
type outputs struct {
	json, csv                   bool
	output, pprof, folded, html string

	opened []*outFile
	doc    *outFile // -o, nil for stdout
}

// outFile is one output file, opened (created if missing) but not yet
// truncated: a run that fails leaves an existing file as it was and
// removes one it created.
type outFile struct {
	flag, path string
	f          *os.File
	created    bool
	truncated  bool // -o: before the first document
	write      func(io.Writer, *report.Document) error
}

func (o *outputs) register(f *pflag.FlagSet) {
	f.BoolVar(&o.json, "json", false, "print zcprof/v1 JSON instead of tables (docs/json.md)")
	f.BoolVar(&o.csv, "csv", false, "print CSV instead of tables: one row per process (or cell side) and path (docs/json.md)")
	f.StringVarP(&o.output, "output", "o", "", "write the document (table, --json or --csv) to `FILE` instead of stdout (a spawned command keeps stdout)")
	f.StringVar(&o.pprof, "pprof", "", "write the sampled kernel stacks, weighted by exact CPU ns, as a gzipped pprof profile to `FILE`")
	f.StringVar(&o.folded, "folded", "", "write the same stacks as folded lines (flamegraph.pl, speedscope) to `FILE`")
	f.StringVar(&o.html, "html", "", "write a self-contained HTML report with charts to `FILE` (works offline)")
}

// wantStacks: an output needs the sampled stacks.
func (o *outputs) wantStacks() bool { return o.pprof != "" || o.folded != "" }

// wantSampling: an output needs sampled stacks or categories (run turns
// the sampler on for them).
func (o *outputs) wantSampling() bool { return o.wantStacks() || o.html != "" }

func (o *outputs) validate() error {
	if o.json && o.csv {
		return errors.New("give either --json or --csv, not both")
	}
	seen := map[string]string{}
	for _, f := range o.fileFlags() {
		if f.path == "" {
			continue
		}
		if other, ok := seen[f.path]; ok {
			return fmt.Errorf("%s and %s both write %s: give each its own file", other, f.flag, f.path)
		}
		seen[f.path] = f.flag
	}
	return nil
}

func (o *outputs) fileFlags() []outFile {
	return []outFile{
		{flag: "--output", path: o.output},
		{flag: "--pprof", path: o.pprof, write: report.WritePprof},
		{flag: "--folded", path: o.folded, write: report.WriteFolded},
		{flag: "--html", path: o.html, write: html.Write},
	}
}

// open opens every output file for writing, before anything is measured.
// On error nothing is left open or created.
func (o *outputs) open() error {
	for _, spec := range o.fileFlags() {
		if spec.path == "" {
			continue
		}
		of := spec
		f, err := os.OpenFile(of.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			f, err = os.OpenFile(of.path, os.O_WRONLY, 0)
		} else {
			of.created = err == nil
		}
		if err != nil {
			o.abandon()
			return fmt.Errorf("%s: %v", of.flag, err)
		}
		of.f = f
		o.opened = append(o.opened, &of)
		if of.flag == "--output" {
			o.doc = &of
		}
	}
	return nil
}

// abandon closes the files and removes those open created: the run did
// not get to write them.
func (o *outputs) abandon() {
	for _, of := range o.opened {
		of.f.Close()
		if of.created {
			os.Remove(of.path)
		}
	}
	o.opened, o.doc = nil, nil
}

// docWriter is where the document goes: -o FILE, or stdout.
func (o *outputs) docWriter(stdout io.Writer) io.Writer {
	if o.doc != nil {
		return o.doc.f
	}
	return stdout
}

// finish writes the file outputs of d and closes every file. It writes
// all it can: one failing does not stop the others. A file that cannot be
// written completely is removed, and the error names it.
func (o *outputs) finish(d *report.Document) error {
	var errs []error
	for _, of := range o.opened {
		if of.write == nil { // the document: already written
			if err := of.f.Close(); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", of.flag, err))
			}
			continue
		}
		if err := of.writeDoc(d); err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", of.flag, err))
		}
	}
	o.opened, o.doc = nil, nil
	return errors.Join(errs...)
}

func (of *outFile) writeDoc(d *report.Document) error {
	var err error
	if of.flag != "--html" && len(d.Stacks) == 0 {
		err = fmt.Errorf("no sampled kernel stacks (attribution backend %q keeps none); use --backend sampling", d.Backends.Attribution)
	}
	regular := false
	if st, serr := of.f.Stat(); serr == nil && st.Mode().IsRegular() {
		regular = true
	}
	if err == nil && regular {
		err = of.f.Truncate(0)
	}
	if err == nil {
		err = of.write(of.f, d)
	}
	if cerr := of.f.Close(); err == nil {
		err = cerr
	}
	if err != nil && regular {
		os.Remove(of.path)
	}
	return err
}

// writeDocument renders d into the document's place: the table by
// default, or --json / --csv. The -o file is truncated before the first
// document (profile --interval writes one per interval).
func (o *outputs) writeDocument(stdout io.Writer, d *report.Document, table func(io.Writer, *report.Document) error) error {
	w := o.docWriter(stdout)
	if o.doc != nil && !o.doc.truncated {
		o.doc.truncated = true
		if st, err := o.doc.f.Stat(); err == nil && st.Mode().IsRegular() {
			if err := o.doc.f.Truncate(0); err != nil {
				return fmt.Errorf("--output: %v", err)
			}
		}
	}
	var err error
	switch {
	case o.json:
		err = report.WriteJSON(w, d)
	case o.csv:
		err = report.WriteCSV(w, d)
	default:
		err = table(w, d)
	}
	if err != nil && o.doc != nil {
		return fmt.Errorf("--output: %v", err)
	}
	return err
}

// writeFile writes one file at once (compare --html, which measures
// nothing); a file that cannot be written completely is removed.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
