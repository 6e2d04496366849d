package main

import (
	"errors"
	"io"

	"github.com/spf13/pflag"

	"github.com/zcprof/zcprof/profiler/report"
)

// outputs are the renderings `run` and `profile` share: one on stdout
// (table, --json or --csv) and any number of files.
type outputs struct {
	json, csv bool
}

func (o *outputs) register(f *pflag.FlagSet) {
	f.BoolVar(&o.json, "json", false, "print zcprof/v1 JSON instead of tables (docs/json.md)")
	f.BoolVar(&o.csv, "csv", false, "print CSV instead of tables: one row per process (or cell side) and path (docs/json.md)")
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
