package compare

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/report"
)

func cell(method string, tput, tputSD, sndMiB, sndSD float64) report.Cell {
	p := report.Process{Comm: "zcprof", CPU: report.CPU{OnCPUNS: 1e9},
		Paths: []report.Path{{Path: "tx." + method, CPUNS: 8e8}, {Path: "user", CPUNS: 2e8}}}
	return report.Cell{Method: method, RxMethod: "read", Size: 65536, Streams: 1, Topology: "loopback", Repeats: 5,
		ThroughputBps: tput, SenderNSPerMiB: sndMiB, Sender: p, Receiver: p,
		Stats: map[string]report.Stat{
			"throughput_bps":    {N: 5, Mean: tput, SD: tputSD, Level: 0.95, CI: tputSD},
			"sender.ns_per_mib": {N: 5, Mean: sndMiB, SD: sndSD, Level: 0.95, CI: sndSD},
		}}
}

func doc(cells ...report.Cell) *report.Document {
	return &report.Document{Schema: report.Schema, Command: "run", Cells: cells}
}

// sideOf is a File of the documents given.
func sideOf(name string, docs ...*report.Document) File { return File{Name: name, Docs: docs} }

func row(t *testing.T, p Pair, fig string) Row {
	t.Helper()
	for _, r := range p.Rows {
		if r.Figure == fig {
			return r
		}
	}
	t.Fatalf("no row %s in %+v", fig, p)
	return Row{}
}

func TestSameConfigurationNoSignificantChange(t *testing.T) {
	r, err := Compare(sideOf("a", doc(cell("write", 10e9, 0.3e9, 300e3, 10e3))),
		[]File{sideOf("b", doc(cell("write", 10.1e9, 0.3e9, 302e3, 10e3)))}, DefaultAlpha)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Comparisons[0].Pairs[0]
	tp := row(t, p, "throughput_bps")
	if !tp.Testable || tp.Significant || tp.P < 0.5 || *tp.DeltaPct < 0.99 || *tp.DeltaPct > 1.01 {
		t.Errorf("throughput: %+v delta %v", tp, *tp.DeltaPct)
	}
	// Path figures without stats are compared but not testable.
	if pr := row(t, p, "sender.path.tx.write.cpu_ns"); pr.Testable {
		t.Errorf("a figure without repeats is testable: %+v", pr)
	}
}

func TestSingleCellsPairAcrossMethods(t *testing.T) {
	r, err := Compare(sideOf("w", doc(cell("write", 10e9, 0.3e9, 300e3, 5e3))),
		[]File{sideOf("s", doc(cell("sendfile", 12e9, 0.3e9, 150e3, 5e3)))}, DefaultAlpha)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Comparisons[0].Pairs[0]
	if p.Base != "write→read 64K ×1" || p.New != "sendfile→read 64K ×1" {
		t.Errorf("pair %q vs %q", p.Base, p.New)
	}
	sd := row(t, p, "sender.ns_per_mib")
	if !sd.Significant || *sd.DeltaPct != -50 {
		t.Errorf("sender CPU/MiB: %+v", sd)
	}
	// Each side's own path is only on that side.
	if w := row(t, p, "sender.path.tx.write.cpu_ns"); w.New.Present || !w.Base.Present {
		t.Errorf("tx.write: %+v", w)
	}
	var out bytes.Buffer
	if err := WriteText(&out, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Welch", "write→read 64K ×1  vs  sendfile→read 64K ×1", "sender CPU/MiB", "-50.0%  (p=0.000)", "300.0 µs/MiB ±2% (n=5)", "?"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
}

func TestNothingInCommon(t *testing.T) {
	a := doc(cell("write", 1, 0, 1, 0), cell("splice", 1, 0, 1, 0))
	b := doc(cell("sendfile", 1, 0, 1, 0), cell("msg_zerocopy", 1, 0, 1, 0))
	_, err := Compare(sideOf("a.json", a), []File{sideOf("b.json", b)}, DefaultAlpha)
	if err == nil || !strings.Contains(err.Error(), "no cell or process in common") {
		t.Errorf("err = %v", err)
	}
	prof := &report.Document{Schema: report.Schema, Command: "profile", Processes: []report.Process{{Comm: "x"}}}
	if _, err := Compare(sideOf("a.json", a), []File{sideOf("p.json", prof)}, DefaultAlpha); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("run vs profile: %v", err)
	}
}

// fileWriter writes files into a temporary directory and returns their
// paths.
func fileWriter(t *testing.T) func(name, s string) string {
	dir := t.TempDir()
	return func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
}

func TestLoadBadInputsOneLine(t *testing.T) {
	write := fileWriter(t)
	good, _ := json.Marshal(doc(cell("write", 1, 0, 1, 0)))
	if _, err := Load(write("good.json", string(good))); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{filepath.Join(t.TempDir(), "missing.json"), "no such file"},
		{write("corrupt.json", `{"schema": "zcprof/v1", "cells": [`), "not a zcprof JSON document"},
		{write("other.json", `{"hello": 1}`), "no schema field"},
		{write("v2.json", `{"schema": "zcprof/v2", "cells": []}`), `schema "zcprof/v2"`},
		{write("empty.json", `{"schema": "zcprof/v1", "command": "run"}`), "no cells or processes"},
	} {
		_, err := Load(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want one line with %q", c.path, err, c.want)
		}
	}
}
