package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/attrib"
)

// Issue 10: no transfer path of a default run has zcprof's own handlers as
// its largest category. Their time is probe time (cut out of the paths)
// and their samples are left out of the paths' shares; what stays
// `tracing` is other tools' BPF and untimed tracing machinery, a few
// percent here against a largest category above a fifth of the path.
func TestRunOwnCodeIsNotAPathsLargestCategory(t *testing.T) {
	requireBPF(t)
	r := run(t, exec.Command(zcprofBin, "run", "--method", "sendfile,msg_zerocopy", "--duration", "2s", "--json", "-q"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	d := decode(t, r.stdout)
	if len(d.Cells) != 2 {
		t.Fatalf("%d cells, want 2", len(d.Cells))
	}
	for _, c := range d.Cells {
		for _, p := range c.Sender.Paths {
			if !strings.HasPrefix(p.Path, "tx.") || len(p.Categories) == 0 {
				continue
			}
			// Categories come largest first.
			largest := p.Categories[0]
			var tracing float64
			for _, cat := range p.Categories {
				if cat.Category == attrib.Tracing {
					tracing = float64(cat.CPUNS) / float64(p.CPUNS)
				}
			}
			t.Logf("%s %s: largest %s %.0f%%, tracing %.1f%%", c.Method, p.Path, largest.Category,
				100*float64(largest.CPUNS)/float64(p.CPUNS), 100*tracing)
			if largest.Category == attrib.Tracing {
				t.Errorf("%s %s: tracing is the largest category: %+v", c.Method, p.Path, p.Categories)
			}
		}
	}
}
