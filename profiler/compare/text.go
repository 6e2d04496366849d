package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/zcprof/zcprof/profiler/report"
)

// WriteJSON writes the result as one indented JSON object.
func WriteJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText renders the result benchstat-style: per pair, one line per
// figure with base and new mean ± interval, the change and its p-value.
func WriteText(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "significance: %s, α = %.2g (~: no significant difference; ?: not testable, a side has fewer than 2 runs)\n", r.Test, r.Alpha)
	for _, c := range r.Comparisons {
		fmt.Fprintf(&b, "\nbase: %s   new: %s\n", c.Base, c.New)
		for _, p := range c.Pairs {
			title := p.Base
			if p.New != p.Base {
				title = p.Base + "  vs  " + p.New
			}
			fmt.Fprintf(&b, "\n%s\n", title)
			tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  figure\tbase\tnew\tdelta\t")
			for _, row := range p.Rows {
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t\n", row.Label, side(row.Base, row.Unit), side(row.New, row.Unit), delta(row))
			}
			tw.Flush()
		}
		if len(c.OnlyBase) > 0 {
			fmt.Fprintf(&b, "\nonly in %s: %s\n", c.Base, strings.Join(c.OnlyBase, ", "))
		}
		if len(c.OnlyNew) > 0 {
			fmt.Fprintf(&b, "only in %s: %s\n", c.New, strings.Join(c.OnlyNew, ", "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func side(s Summary, unit string) string {
	if !s.Present {
		return "—"
	}
	out := Value(s.Mean, unit)
	out += report.PlusMinus(s.CI, s.Mean, 0)
	if s.N > 1 {
		out += fmt.Sprintf(" (n=%d)", s.N)
	}
	return out
}

func delta(r Row) string {
	d := "—"
	if r.DeltaPct != nil {
		d = fmt.Sprintf("%+.1f%%", *r.DeltaPct)
	}
	switch {
	case !r.Testable:
		return d + "  ?"
	case r.Significant:
		return fmt.Sprintf("%s  (p=%.3f)", d, r.P)
	}
	return fmt.Sprintf("~  (p=%.3f)", r.P)
}

// Value formats a figure in its unit.
func Value(v float64, unit string) string {
	switch unit {
	case "bps":
		return report.Throughput(v)
	case "ns/MiB":
		return report.MicrosPerMiB(v)
	case "ns":
		return report.Time(v)
	}
	return fmt.Sprintf("%g", v)
}
