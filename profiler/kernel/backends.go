package kernel

import (
	"fmt"
	"slices"
	"strings"
)

// Backend and attach-kind names: the values of --accounting and --backend,
// the keys of backends.unavailable, and doctor's attach checks. One
// spelling for the CLI, the library and doctor.
const (
	Auto        = "auto"
	TpBTF       = "tp_btf"
	RawTp       = "raw_tp"
	Fentry      = "fentry"
	Kprobe      = "kprobe"
	KprobeMulti = "kprobe-multi"
	PerfEvent   = "perf_event"
	// Tracepoint is a classic tracepoint, attached by its tracefs id
	// (doctor's check of the ones zcprof attaches so).
	Tracepoint = "tracepoint"
	Sampling   = "sampling" // the attribution backend built on perf_event
	None       = "none"
)

// The capability ladder, each layer in `auto`'s order of preference
// (docs/architecture.md): never a silent downgrade, every rung skipped is
// reported with the kernel's reason.
var (
	// AccountingLadder is the exact accounting's: typed tracepoint
	// arguments, then the same tracepoints read with bpf_probe_read.
	AccountingLadder = []string{TpBTF, RawTp}
	// AttributionLadder is the split inside each path's: function-exact
	// (BPF trampolines, then kprobes), then statistical sampling.
	AttributionLadder = []string{Fentry, Kprobe, Sampling}
)

// AccountingChoices are the values --accounting takes.
func AccountingChoices() []string { return append([]string{Auto}, AccountingLadder...) }

// AttributionChoices are the values --backend takes. Sampling first: it
// works everywhere.
func AttributionChoices() []string {
	return []string{Auto, Sampling, Fentry, Kprobe, None}
}

// Choose returns nil when name is one of choices, else the one-line error
// both the CLI and the library print: `<flag> "x": unknown<what> (use a, b
// or c)`.
func Choose(flag, what, name string, choices []string) error {
	if slices.Contains(choices, name) {
		return nil
	}
	return fmt.Errorf("%s %q: unknown%s (use %s)", flag, name, what, OrList(choices))
}

// OrList joins names as "a, b or c".
func OrList(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
