package doctor

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// sections orders the check kinds in the text report.
var sections = []struct{ kind, title string }{
	{KindFeature, "Features"},
	{KindAttach, "Attach kinds"},
	{KindTracepoint, "Tracepoints"},
	{KindFunction, "Functions (fentry/kprobe targets, KERNEL.md §12)"},
}

// WriteText writes the report as aligned tables, one per section, then the
// decision. Each check that is not ok is followed by what zcprof does instead.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	irq := "no"
	if r.IRQTimeAccounting {
		irq = "yes"
	}
	fmt.Fprintf(tw, "Kernel %s, %d CPUs, HZ=%d, IRQ time accounting: %s\n", r.Kernel, r.CPUs, r.HZ, irq)

	s := r.Settings
	fmt.Fprintf(tw, "\nSettings\n")
	fmt.Fprintf(tw, "  lockdown\t%s\n", s.Lockdown)
	fmt.Fprintf(tw, "  kptr_restrict\t%s\n", s.KptrRestrict)
	fmt.Fprintf(tw, "  perf_event_paranoid\t%s\n", s.PerfEventParanoid)
	fmt.Fprintf(tw, "  io_uring_disabled\t%s\n", s.IOUringDisabled)
	fmt.Fprintf(tw, "  kernel config\t%s\n", s.ConfigSource)
	names := make([]string, 0, len(s.Config))
	for k := range s.Config {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(tw, "    %s\t%s\n", k, s.Config[k])
	}

	for _, sec := range sections {
		fmt.Fprintf(tw, "\n%s\n", sec.title)
		for _, c := range r.Checks {
			if c.Kind != sec.kind {
				continue
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Name, c.Status, c.Detail)
			if c.Instead != "" && c.Status != StatusOK {
				fmt.Fprintf(tw, "  \t\t-> %s\n", c.Instead)
			}
		}
	}

	fmt.Fprintf(tw, "\nDecision (auto)\n")
	decisionRow(tw, "accounting", r.Accounting, skipped(r, AttachTpBTF))
	decisionRow(tw, "attribution", r.Attribution, skipped(r, AttachFentry, AttachKprobe))
	return tw.Flush()
}

func decisionRow(w io.Writer, layer, backend, note string) {
	if note == "" {
		fmt.Fprintf(w, "  %s\t%s\n", layer, backend)
		return
	}
	fmt.Fprintf(w, "  %s\t%s  %s\n", layer, backend, note)
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
