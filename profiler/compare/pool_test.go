package compare

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/report"
)

// single is one run's cell (--repeat 1: figures without stats).
func single(tput float64, withPath bool) report.Cell {
	c := cell("write", tput, 0, 300e3, 0)
	c.Repeats, c.Stats = 1, nil
	if !withPath {
		c.Sender.Paths = c.Sender.Paths[1:] // tx.write not taken
	}
	return c
}

// Pooled documents of single runs are tested as one sample of all their
// runs: n, mean and spread are those of the values together, and a path a
// run did not take counts as 0 in it.
func TestPooledSideIsOneSample(t *testing.T) {
	base := sideOf("a1,a2,a3", doc(single(10e9, true)), doc(single(12e9, false)), doc(single(14e9, true)))
	other := sideOf("b1,b2,b3", doc(single(10e9, true)), doc(single(12e9, true)), doc(single(14.5e9, true)))
	r, err := Compare(base, []File{other}, DefaultAlpha)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Comparisons[0].Pairs[0]
	tp := row(t, p, "throughput_bps")
	// 10, 12, 14: mean 12, sd 2; t(0.975, 2) = 4.3027.
	if tp.Base.N != 3 || tp.Base.Mean != 12e9 || math.Abs(tp.Base.SD-2e9) > 1 || math.Abs(tp.Base.CI-4.3027*2e9/math.Sqrt(3)) > 1e6 {
		t.Errorf("pooled base throughput %+v", tp.Base)
	}
	if !tp.Testable || tp.Significant {
		t.Errorf("same configuration pooled: %+v", tp)
	}
	// tx.write's 8e8 ns in two runs of three: mean 16/3e8, sd of (8,0,8)e8.
	u := row(t, p, "sender.path.tx.write.cpu_ns")
	if u.Base.N != 3 || math.Abs(u.Base.Mean-16e8/3) > 1 || math.Abs(u.Base.SD-math.Sqrt(64e16/3)) > 1 {
		t.Errorf("a path one run did not take: %+v", u.Base)
	}
}

func TestLoadSidePoolsOneCommand(t *testing.T) {
	write := fileWriter(t)
	run1 := write("run1.json", `{"schema": "zcprof/v1", "command": "run", "cells": [{}]}`)
	run2 := write("run2.json", `{"schema": "zcprof/v1", "command": "run", "cells": [{}]}`)
	prof := write("prof.json", `{"schema": "zcprof/v1", "command": "profile", "processes": [{}]}`)
	f, err := LoadSide(run1 + "," + run2)
	if err != nil || len(f.Docs) != 2 || f.Name != run1+","+run2 {
		t.Fatalf("LoadSide = %+v, %v", f, err)
	}
	if _, err := LoadSide(run1 + "," + prof); err == nil || !strings.Contains(err.Error(), `a "profile" document pooled with a "run" one`) {
		t.Errorf("run pooled with profile: %v", err)
	}
	if _, err := LoadSide(run1 + "," + filepath.Join(filepath.Dir(run1), "none.json")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing pooled file: %v", err)
	}
}
