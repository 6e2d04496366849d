package testenv

import (
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// RunStats turns the kernel's BPF run-time statistics on until the
// benchmark ends, for the benchmarks that read programs' run time
// (Session.ProgramStats). A session never turns them on itself: they add
// two clock reads to every run of every BPF program on the host.
func RunStats(tb testing.TB) {
	tb.Helper()
	c, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		tb.Fatalf("enable BPF run-time statistics: %v", err)
	}
	tb.Cleanup(func() { c.Close() })
}
