package main

import (
	"encoding/json"
	"errors"

	"github.com/spf13/cobra"

	"github.com/zcprof/zcprof/profiler/doctor"
	"github.com/zcprof/zcprof/profiler/kernel"
)

func newDoctorCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Probe what this kernel allows (tp_btf, raw_tp, fentry, kprobe, perf_event) and which backends auto picks",
		Long: `doctor really loads and attaches one trivial BPF program per attach kind, checks
every tracepoint and key kernel function zcprof uses, reads the kernel settings
that matter (lockdown, perf_event_paranoid, HZ, IRQ time accounting), and prints
what works, why the rest does not, and what zcprof does instead.
Exits non-zero when no exact-accounting backend works.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SilenceUsage = true // errors from here on are not usage errors
			if err := kernel.Privileged(); err != nil {
				return err
			}
			removeLeftovers()
			r := doctor.Run(doctor.Options{})
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
					return err
				}
			} else if err := r.WriteText(out); err != nil {
				return err
			}
			if r.Accounting == kernel.None {
				return errors.New("no exact-accounting backend works on this kernel (see tp_btf and raw_tp above)")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
