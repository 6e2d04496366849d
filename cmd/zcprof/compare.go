package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/zcprof/zcprof/profiler/compare"
	"github.com/zcprof/zcprof/profiler/report/html"
)

func newCompareCmd() *cobra.Command {
	var (
		asJSON   bool
		alpha    float64
		htmlFile string
	)
	cmd := &cobra.Command{
		Use:   "compare BASE.json[,BASE2.json...] NEW.json[,NEW2.json...] [MORE.json ...]",
		Short: "Compare zcprof JSON results (before and after a kernel patch): change per figure and its significance",
		Long: `Matches the cells (zcprof run) or processes (zcprof profile) of each document with the base's and
prints, per figure (throughput, CPU per side, service demand, each path and category), the base and
new mean with their confidence interval, the change in percent, and whether it is significant:
Welch's two-sided t-test over the repeats (run --repeat N). Figures without repeats on both sides
are compared but marked not testable (?). Two documents of one cell each are compared whatever the
cells' methods (write against sendfile).

A side may be a comma-separated list of documents (a1.json,a2.json,...): their cells are pooled, each
figure's n, mean and spread taken over all their runs. Make the two sides' runs in turn, so that a drift
of the machine hits both alike.`,
		Example: `  zcprof run --method write --repeat 10 --json > before.json
  # boot the patched kernel
  zcprof run --method write --repeat 10 --json > after.json
  zcprof compare before.json after.json`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var files []compare.File
			for _, a := range args {
				f, err := compare.LoadSide(a)
				if err != nil {
					return err
				}
				files = append(files, f)
			}
			r, err := compare.Compare(files[0], files[1:], alpha)
			if err != nil {
				return err
			}
			if htmlFile != "" {
				if err := writeFile(htmlFile, func(w io.Writer) error { return html.WriteCompare(w, r) }); err != nil {
					return fmt.Errorf("--html: %v", err)
				}
			}
			if asJSON {
				return compare.WriteJSON(cmd.OutOrStdout(), r)
			}
			return compare.WriteText(cmd.OutOrStdout(), r)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print the comparison as JSON (schema zcprof-compare/v1)")
	f.StringVar(&htmlFile, "html", "", "also write the comparison as a self-contained HTML report with charts to `FILE`")
	f.Float64Var(&alpha, "alpha", compare.DefaultAlpha, "significance level of the test")
	return cmd
}
