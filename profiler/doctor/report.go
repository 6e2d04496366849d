package doctor

import "github.com/zcprof/zcprof/profiler/kernel"

// Status of one check (profiler/kernel's probe statuses).
const (
	StatusOK          = kernel.StatusOK
	StatusUnavailable = kernel.StatusUnavailable
	StatusDegraded    = kernel.StatusDegraded
)

// Check kinds, which are also the sections of the text report.
const (
	KindAttach     = "attach"     // one BPF attach kind (tp_btf, fentry, ...)
	KindFeature    = "feature"    // BTF, io_uring
	KindTracepoint = "tracepoint" // a tracepoint zcprof uses
	KindFunction   = "function"   // a fentry/kprobe target (KeyFunctions)
	KindPseudoFS   = "pseudofs"   // tracefs, securityfs: mounted or mountable
)

// Report is what `zcprof doctor` found on this kernel.
type Report struct {
	Kernel            string   `json:"kernel"`
	CPUs              int      `json:"cpus"`
	HZ                int      `json:"hz"`
	IRQTimeAccounting bool     `json:"irq_time_accounting"`
	PreemptRT         bool     `json:"preempt_rt"`
	Settings          Settings `json:"settings"`
	Checks            []Check  `json:"checks"`
	// Accounting is the exact-accounting backend `auto` picks: "tp_btf",
	// "raw_tp" or "none".
	Accounting string `json:"accounting"`
	// Attribution is the inside-the-kernel backend `auto` picks: "fentry",
	// "kprobe", "sampling" or "none".
	Attribution string `json:"attribution"`
	// Unavailable maps each attach kind that did not pass ("fentry",
	// "kprobe", ...) and each missing tracepoint ("tracepoint/<name>") to the
	// kernel's reason, as in backends.unavailable of the zcprof/v1 contract.
	Unavailable map[string]string `json:"unavailable"`
}

// Check is the result of one probe.
type Check struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	Detail  string `json:"detail,omitempty"`  // what happened, with the kernel's error
	Instead string `json:"instead,omitempty"` // what zcprof does when this is missing
}

// Settings are the kernel knobs that decide what works.
type Settings struct {
	// Lockdown is the active mode of /sys/kernel/security/lockdown
	// ("none", "integrity", "confidentiality") or "unknown (...)".
	Lockdown          string `json:"lockdown"`
	KptrRestrict      string `json:"kptr_restrict"`
	PerfEventParanoid string `json:"perf_event_paranoid"`
	IOUringDisabled   string `json:"io_uring_disabled"`
	BTF               bool   `json:"btf"`
	// Config holds the kernel config options doctor looks at, as "y", "m",
	// a value, or "n" when unset; empty when the config was not found.
	Config       map[string]string `json:"config"`
	ConfigSource string            `json:"config_source"`
}

// Check returns the check called name of the given kind, if any.
func (r Report) Check(kind, name string) (Check, bool) {
	for _, c := range r.Checks {
		if c.Kind == kind && c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}
