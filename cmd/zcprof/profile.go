package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/backends"
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/report"
)

// stopHint says what ends a profile that has no command of its own.
func stopHint(opts profiler.ProfileOptions) string {
	switch {
	case opts.Duration > 0:
		return fmt.Sprintf("stopping after %v or on Ctrl-C", opts.Duration)
	case len(opts.Target.PIDs) == 1:
		return "stopping when it exits or on Ctrl-C"
	case len(opts.Target.PIDs) > 1:
		return "stopping when they all exit or on Ctrl-C"
	}
	return "Ctrl-C to stop"
}

func newProfileCmd() *cobra.Command {
	var (
		opts      profiler.ProfileOptions
		pids      []int
		outs      outputs
		metr      metricsFlags
		noFollow  bool
		threadsOn bool
		attr      attrib.Options
	)
	cmd := &cobra.Command{
		Use:   "profile [flags] [-- command [args...]]",
		Short: "Exact per-thread, per-path CPU of a command, processes, a cgroup or the whole system",
		Example: `  zcprof profile -- iperf3 -c 127.0.0.1 -Z
  zcprof profile --pid 4242 --duration 10s
  zcprof profile --comm nginx --interval 1s
  zcprof profile --cgroup /sys/fs/cgroup/unified/my.slice -d 5s
  zcprof profile -a -d 5s --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			t := &opts.Target
			t.PIDs = pids
			t.FollowChildren = !noFollow
			opts.Command = args
			opts.Threads = threadsOn
			if err := outs.validate(); err != nil {
				return err
			}
			if err := validateProfile(cmd, opts); err != nil {
				return err
			}
			if err := validateAttribution(attr); err != nil {
				return err
			}
			if outs.wantStacks() && attr.Backend == kernel.None {
				return errors.New("--pprof and --folded need sampled stacks: drop --backend none")
			}
			opts.Extensions = append(opts.Extensions, attrib.Extension(attr, backends.Attribution()))
			removeLeftovers()
			if err := outs.open(); err != nil {
				return err
			}
			written := false
			defer func() {
				if !written {
					outs.abandon()
				}
			}()
			stdout := cmd.OutOrStdout()
			if len(opts.Command) > 0 && outs.doc == nil && (outs.json || outs.csv) {
				// The document must stay parseable: the command's
				// own output goes to stderr (-o FILE keeps it on stdout).
				opts.CommandStdout = os.Stderr
			}
			mountSaid := false
			render := func(d *report.Document) error {
				return outs.writeDocument(stdout, d, func(w io.Writer, d *report.Document) error {
					// The table says once that zcprof mounted tracefs
					// (the JSON keeps backends.mounted in every document).
					if mountSaid {
						once := *d
						once.Backends.Mounted = nil
						d = &once
					}
					mountSaid = mountSaid || len(d.Backends.Mounted) > 0
					return report.WriteTable(w, d)
				})
			}
			userInterval := opts.Interval > 0
			if userInterval {
				opts.OnInterval = render
			}
			opts.OnMapFull = func(full map[string]uint64) { warnMapFull(cmd.ErrOrStderr(), full) }
			if len(opts.Command) == 0 {
				// As perf and bpftrace do: say when measuring starts, so
				// a user (or a script) knows the target is now watched.
				opts.OnStart = func() {
					fmt.Fprintf(cmd.ErrOrStderr(), "zcprof: profiling %s; %s\n", t, stopHint(opts))
				}
			}
			stopMetrics, err := metr.start(cmd.Context(), &opts, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			res, err := profiler.Profile(cmd.Context(), opts)
			stopMetrics()
			if err != nil {
				return err
			}
			if userInterval && !outs.json && !outs.csv {
				fmt.Fprintln(outs.docWriter(stdout), "\n=== whole run ===")
			}
			written = true
			if err := errors.Join(render(res.Document), outs.finish(res.Document)); err != nil {
				return err
			}
			if res.ExitCode != 0 {
				return exitError{res.ExitCode}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntSliceVarP(&pids, "pid", "p", nil, "profile these processes (all threads), comma-separated")
	f.StringVar(&opts.Target.Comm, "comm", "", "profile every process with this command name")
	f.StringVar(&opts.Target.Cgroup, "cgroup", "", "profile the tasks of this cgroup v2 directory and its descendants")
	f.BoolVarP(&opts.Target.All, "all", "a", false, "profile every task on the system (except zcprof)")
	f.DurationVarP(&opts.Duration, "duration", "d", 0, "stop after this long (default: until the command or pids exit, or Ctrl-C)")
	f.DurationVarP(&opts.Interval, "interval", "i", 0, "also print a report every interval")
	f.BoolVar(&threadsOn, "threads", false, "break each process down by thread")
	f.BoolVar(&noFollow, "no-follow", false, "do not follow children forked by the targets")
	outs.register(f)
	metr.register(f)
	registerBackends(f, &opts.Backend, &opts.ByteClasses, &attr)
	return cmd
}

func validateAttribution(o attrib.Options) error { return o.Validate() }

func validateProfile(cmd *cobra.Command, o profiler.ProfileOptions) error {
	t := o.Target
	targets := 0
	for _, set := range []bool{len(t.PIDs) > 0, t.Comm != "", t.Cgroup != "", t.All, len(o.Command) > 0} {
		if set {
			targets++
		}
	}
	if targets == 0 {
		return errors.New("nothing to profile: give a command after --, or --pid, --comm, --cgroup or -a")
	}
	if len(o.Command) > 0 && cmd.ArgsLenAtDash() != 0 {
		return fmt.Errorf("unexpected argument %q: put the command to profile after --", o.Command[0])
	}
	if t.All && targets > 1 {
		return errors.New("-a already profiles everything: drop the other target flags")
	}
	for _, pid := range t.PIDs {
		if pid <= 0 {
			return fmt.Errorf("--pid %d: not a process id", pid)
		}
	}
	if err := validateBackends(o.Backend, o.ByteClasses); err != nil {
		return err
	}
	if o.Duration < 0 {
		return fmt.Errorf("--duration %v: must be positive", o.Duration)
	}
	if o.Interval < 0 || (o.Interval > 0 && o.Interval < 100*time.Millisecond) {
		return fmt.Errorf("--interval %v: must be at least 100ms", o.Interval)
	}
	return nil
}
