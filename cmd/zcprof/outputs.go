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

// outputs are the renderings `run` and `profile` share: one on stdout
// (table, --json or --csv) and any number of files.
type outputs struct {
	json, csv           bool
	pprof, folded, html string
}

func (o *outputs) register(f *pflag.FlagSet) {
	f.BoolVar(&o.json, "json", false, "print zcprof/v1 JSON instead of tables (docs/json.md)")
	f.BoolVar(&o.csv, "csv", false, "print CSV instead of tables: one row per process (or cell side) and path (docs/json.md)")
	f.StringVar(&o.pprof, "pprof", "", "write the sampled kernel stacks, weighted by exact CPU ns, as a gzipped pprof profile to `FILE`")
	f.StringVar(&o.folded, "folded", "", "write the same stacks as folded lines (flamegraph.pl, speedscope) to `FILE`")
	f.StringVar(&o.html, "html", "", "write a self-contained HTML report with charts to `FILE` (works offline)")
}

// wantStacks: an output needs the sampled stacks.
func (o *outputs) wantStacks() bool { return o.pprof != "" || o.folded != "" }

// wantSampling: an output needs sampled stacks or categories (run turns
// the sampler on for them).
func (o *outputs) wantSampling() bool { return o.wantStacks() || o.html != "" }

// files writes the file outputs. A file that cannot be written completely
// is removed, and the error names it.
func (o *outputs) files(d *report.Document) error {
	for _, out := range []struct {
		flag, path string
		write      func(io.Writer, *report.Document) error
	}{{"--pprof", o.pprof, report.WritePprof}, {"--folded", o.folded, report.WriteFolded}, {"--html", o.html, html.Write}} {
		if out.path == "" {
			continue
		}
		if out.flag != "--html" && len(d.Stacks) == 0 {
			return fmt.Errorf("%s: no sampled kernel stacks (attribution backend %q keeps none); use --backend sampling", out.flag, d.Backends.Attribution)
		}
		if err := writeFile(out.path, func(w io.Writer) error { return out.write(w, d) }); err != nil {
			return fmt.Errorf("%s: %v", out.flag, err)
		}
	}
	return nil
}

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

func (o *outputs) validate() error {
	if o.json && o.csv {
		return errors.New("give either --json or --csv, not both")
	}
	return nil
}

// stdout renders d on w; table is the default renderer of the command.
func (o *outputs) stdout(w io.Writer, d *report.Document, table func(io.Writer, *report.Document) error) error {
	switch {
	case o.json:
		return report.WriteJSON(w, d)
	case o.csv:
		return report.WriteCSV(w, d)
	}
	return table(w, d)
}
