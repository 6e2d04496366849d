// Command zcprof measures where the kernel spends CPU moving bytes, per
// thread and per transfer path, exactly, with eBPF.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/zcprof/zcprof/profiler/spawn"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

// exitError carries a specific exit status (the spawned command's).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "zcprof",
		Short:         "Exact per-path kernel CPU profiler for copy and zero-copy TCP transfers",
		Version:       version,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.AddCommand(newProfileCmd(), newDoctorCmd(), newRunCmd(), newCompareCmd(), newServeCmd())
	return root
}

func main() {
	spawn.RunHelperIfRequested()
	// Ctrl-C and SIGTERM cancel the context: every command then detaches
	// its programs and removes what it created before exiting.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	var ee exitError
	switch {
	case errors.As(err, &ee):
		os.Exit(ee.code)
	case err != nil:
		fmt.Fprintf(os.Stderr, "zcprof: %v\n", err)
		os.Exit(1)
	}
}
