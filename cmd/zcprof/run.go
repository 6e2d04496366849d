package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/workload"
	zrun "github.com/zcprof/zcprof/workload/run"
)

func newRunCmd() *cobra.Command {
	var (
		methods, rxMethods, sizes, streams, bytesStr, cpus, ci string
		duration                                               time.Duration
		opts                                                   = zrun.Defaults()
		quiet                                                  bool
		attr                                                   attrib.Options
		out                                                    outputs
		rf                                                     remoteFlags
	)
	cmd := &cobra.Command{
		Use:   "run [flags]",
		Short: "Run copy and zero-copy transfers and measure each side's CPU exactly",
		Long: `Runs a matrix of TCP transfers (send methods x receive methods x sizes x streams) with
zcprof's own generator and measures the sender's and the receiver's threads exactly: on-CPU
time split into syscall, softirq (and for whose socket it was) and user work, with the kernel's
schedstat and times() figures beside, and the zero-copy facts the workload observed.`,
		Example: `  zcprof run
  zcprof run --method write,sendfile,msg_zerocopy --size 8K,64K,256K --streams 1,4 --duration 5s
  zcprof run --method io_uring_zc --rx-method zerocopy --topology netns --cpus 0:1 --repeat 5 --json
  zcprof run --method write,sendfile --repeat 10 --ci 95,5
  zcprof run --remote ssh://lab2 --method write,sendfile,msg_zerocopy --size 64K,1M
  zcprof run --remote 10.0.0.2:7471 --token-file tok --reverse --rx-method zerocopy --repeat 5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			f := cmd.Flags()
			if err := out.validate(); err != nil {
				return err
			}
			opts.Methods = zrun.SplitList(methods)
			opts.RxMethods = zrun.SplitList(rxMethods)
			if opts.Sizes, err = zrun.ParseSizes(sizes); err != nil {
				return fmt.Errorf("--size: %v", err)
			}
			if opts.Streams, err = zrun.ParseInts(streams); err != nil {
				return fmt.Errorf("--streams: %v", err)
			}
			if f.Changed("bytes") {
				if f.Changed("duration") {
					return fmt.Errorf("give either --duration or --bytes, not both")
				}
				if opts.Bytes, err = zrun.ParseSize(bytesStr); err != nil {
					return fmt.Errorf("--bytes: %v", err)
				}
				opts.Duration = 0
			} else {
				opts.Duration = duration
				if duration <= 0 {
					return fmt.Errorf("--duration %v: must be positive", duration)
				}
			}
			if opts.SenderCPU, opts.ReceiverCPU, err = zrun.ParseCPUs(cpus, rf.runsHere); err != nil {
				return err
			}
			if f.Changed("ci") {
				if opts.CI, err = zrun.ParseCI(ci); err != nil {
					return err
				}
				if !f.Changed("repeat") {
					opts.Repeat = zrun.DefaultCIRepeat
				}
			}
			if err := validateAttribution(attr); err != nil {
				return err
			}
			if out.wantSampling() && attr.Backend == kernel.None {
				return errors.New("--pprof, --folded and --html need the sampling backend: drop --backend none")
			}
			if out.wantStacks() && attr.Backend == kernel.Auto {
				// Stacks come from the sampler only: auto would pick
				// fentry where the kernel allows it.
				attr.Backend = kernel.Sampling
			}
			opts.Attribution = &attr
			if err := validateBackends(opts.Backend, opts.ByteClasses); err != nil {
				return err
			}
			note := func(s string) { fmt.Fprintln(cmd.ErrOrStderr(), "zcprof: "+s) }
			if !f.Changed("method") && rf.runsHere(workload.RoleSender) {
				opts.Methods = leaveOutUnsendable(opts.Methods, workload.CanSend, note)
			}
			removeLeftovers()
			if err := out.open(); err != nil {
				return err
			}
			closeRemote, err := rf.connect(cmd.Context(), f, &opts, note)
			if err != nil {
				out.abandon()
				return err
			}
			defer closeRemote()
			done := runProgress(cmd.ErrOrStderr(), &opts, quiet)
			d, err := zrun.Run(cmd.Context(), opts)
			done()
			if err != nil {
				if d != nil {
					// The cells finished before the failure.
					_ = out.writeDocument(cmd.OutOrStdout(), d, report.WriteRunTable)
				}
				out.abandon()
				return err
			}
			// The table first: a file that cannot be written fails the
			// exit, not the figures.
			return errors.Join(out.writeDocument(cmd.OutOrStdout(), d, report.WriteRunTable), out.finish(d))
		},
	}
	f := cmd.Flags()
	f.StringVar(&methods, "method", strings.Join(zrun.DefaultMethods, ","), "send methods: "+strings.Join(workload.Methods, ", "))
	f.StringVar(&rxMethods, "rx-method", workload.RxRead, "receive methods: "+strings.Join(workload.RxMethods, ", "))
	f.StringVar(&sizes, "size", "64K", "bytes per send call and receive buffer, comma-separated (K, M suffixes)")
	f.StringVar(&streams, "streams", "1", "parallel connections, comma-separated")
	f.DurationVarP(&duration, "duration", "d", 3*time.Second, "run time of each cell")
	f.StringVar(&bytesStr, "bytes", "", "send exactly this many bytes per stream instead of --duration (K, M, G suffixes)")
	f.StringVar(&opts.Topology, "topology", workload.TopoLoopback, "loopback, or netns (two namespaces joined by a veth pair)")
	f.StringVar(&cpus, "cpus", "", "pin senders and receivers: SENDER:RECEIVER, e.g. 0:1")
	f.IntVar(&opts.Repeat, "repeat", 1, "runs per cell: figures are means with a confidence interval (with --ci: the most runs)")
	f.StringVar(&ci, "ci", "", "LEVEL,WIDTH: repeat (at least 3, at most --repeat, default 10) until the LEVEL% interval of throughput and both CPUs is at most WIDTH% of the mean wide, i.e. ±WIDTH/2% (netperf -I)")
	f.BoolVar(&opts.ColdCache, "cold-cache", false, "evict the payload file from the page cache before each run (sendfile, splice, mmap)")
	f.StringVar(&opts.Congestion, "congestion", "", "senders' TCP congestion control, e.g. cubic or bbr (default: the system's; iperf3 -C)")
	f.IntVar(&opts.MSS, "mss", 0, fmt.Sprintf("TCP_MAXSEG of the data connections, %d to %d (iperf3 -M; default: the path's own, or on one host a page of payload for --rx-method zerocopy); the MSS the handshake settled on is in the JSON's workload.mss", workload.MinMSS, workload.MaxMSS))
	f.BoolVar(&opts.Threads, "threads", false, "break each side down by thread")
	out.register(f)
	rf.register(f)
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress on stderr (a bar on a terminal, one line per cell otherwise)")
	registerBackends(f, &opts.Backend, &opts.ByteClasses, &attr)
	return cmd
}

// leaveOutUnsendable takes out of the default matrix the methods the
// sending kernel cannot send with (canSend says why), in one line per
// reason, so that a kernel without io_uring still runs the rest. Methods
// the user named are kept, and refused in one line instead.
func leaveOutUnsendable(methods []string, canSend func(string) error, note func(string)) []string {
	var keep []string
	var reasons []string
	out := map[string][]string{}
	for _, m := range methods {
		err := canSend(m)
		if err == nil {
			keep = append(keep, m)
			continue
		}
		if out[err.Error()] == nil {
			reasons = append(reasons, err.Error())
		}
		out[err.Error()] = append(out[err.Error()], m)
	}
	for _, why := range reasons {
		note(fmt.Sprintf("the default matrix leaves out %s: %s", strings.Join(out[why], ", "), why))
	}
	return keep
}
