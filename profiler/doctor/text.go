package doctor

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/zcprof/zcprof/profiler/kernel"
)

// sections orders the check kinds in the text report.
var sections = []struct{ kind, title string }{
	{KindFeature, "Features"},
	{KindPseudoFS, "Pseudo-filesystems"},
	{KindAttach, "Attach kinds"},
	{KindTracepoint, "Tracepoints"},
	{KindFunction, "Functions (fentry/kprobe targets)"},
}

// WriteText writes the report as aligned tables, one per section, then the
// decision. Each check that is not ok is followed by what zcprof does instead.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	irq := "no"
	if r.IRQTimeAccounting {
		irq = "yes"
	}
	rt := ""
	if r.PreemptRT {
		rt = ", PREEMPT_RT"
	}
	fmt.Fprintf(tw, "Kernel %s%s, %d CPUs, HZ=%d, IRQ time accounting: %s\n", r.Kernel, rt, r.CPUs, r.HZ, irq)

	s := r.Settings
	fmt.Fprintf(tw, "\nSettings\n")
	row(tw, "  lockdown", s.Lockdown)
	row(tw, "  kptr_restrict", s.KptrRestrict)
	row(tw, "  perf_event_paranoid", s.PerfEventParanoid)
	row(tw, "  io_uring_disabled", s.IOUringDisabled)
	row(tw, "  kernel config", s.ConfigSource)
	names := make([]string, 0, len(s.Config))
	for k := range s.Config {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		row(tw, "    "+k, s.Config[k])
	}

	for _, sec := range sections {
		fmt.Fprintf(tw, "\n%s\n", sec.title)
		for _, c := range r.Checks {
			if c.Kind != sec.kind {
				continue
			}
			row(tw, "  "+c.Name, c.Status, c.Detail)
			if c.Instead != "" && c.Status != StatusOK {
				row(tw, "", "", "-> "+c.Instead)
			}
		}
	}

	fmt.Fprintf(tw, "\nDecision (auto)\n")
	row(tw, "  accounting", r.Accounting, skipped(r, kernel.TpBTF))
	row(tw, "  attribution", r.Attribution, skipped(r, kernel.Fentry, kernel.Kprobe))
	return tw.Flush()
}

// row writes tab-separated cells without trailing empty ones, which
// tabwriter would pad into trailing spaces.
func row(w io.Writer, cells ...string) {
	for len(cells) > 1 && cells[len(cells)-1] == "" {
		cells = cells[:len(cells)-1]
	}
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}

// skipped says which better rungs were passed over, if any.
func skipped(r Report, kinds ...string) string {
	var out []string
	for _, k := range kinds {
		if _, ok := r.Unavailable[k]; ok {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "(" + strings.Join(out, ", ") + " unavailable)"
}
