package report

// Schema names the JSON contract; bump it when a field is renamed.
const Schema = "zcprof/v1"

// Document is one `zcprof profile` or `zcprof run` result.
type Document struct {
	Schema     string     `json:"schema"`
	Command    string     `json:"command"` // "profile" or "run"
	Host       Host       `json:"host"`
	Backends   Backends   `json:"backends"`
	Overhead   Overhead   `json:"overhead"`
	DurationNS uint64     `json:"duration_ns"`
	Processes  []Process  `json:"processes,omitempty"`
	Cells      []Cell     `json:"cells,omitempty"`
	System     *System    `json:"system,omitempty"`
	Precision  *Precision `json:"precision,omitempty"`
	Warnings   []string   `json:"warnings,omitempty"`
	// Stacks are the sampled kernel stacks weighted by exact time, for
	// --pprof and --folded (stacks.go); not part of the JSON contract.
	Stacks []Stack `json:"-"`
}

// Host describes the machine and kernel the figures come from.
type Host struct {
	Hostname          string `json:"hostname"`
	Kernel            string `json:"kernel"`
	CPUs              int    `json:"cpus"`
	HZ                int    `json:"hz"`
	IRQTimeAccounting bool   `json:"irq_time_accounting"`
	PreemptRT         bool   `json:"preempt_rt"`
}

// Backends says how the figures were obtained.
type Backends struct {
	Accounting  string            `json:"accounting"`
	Attribution string            `json:"attribution"`
	Unavailable map[string]string `json:"unavailable"`
	// ByteClasses is how send decisions were observed: "tcp_sendmsg_locked"
	// (the kernel's own decision, 6.16+), "syscall" (inferred from the
	// syscall and socket state) or "" (not loaded).
	ByteClasses string `json:"byte_classes"`
	// ProgramIDs are the kernel ids of the programs this run attached; all
	// are gone when zcprof exits (`bpftool prog show id N` fails).
	ProgramIDs []uint32 `json:"program_ids"`
	// Mounted lists the pseudo-filesystems zcprof mounted itself because
	// the machine had not (tracefs), one line each; zcprof unmounts them
	// when the last zcprof exits.
	Mounted []string `json:"mounted,omitempty"`
	// ByteClassesUnavailable lists the byte-class sources that could not
	// be attached although byte classes were loaded (e.g. "TCP_ZEROCOPY_
	// RECEIVE mapped bytes"): their bytes are not counted, so a verdict
	// that depends on one cannot tell. The reason of each is in
	// Unavailable["byte classes: <source>"].
	ByteClassesUnavailable []string `json:"byte_classes_unavailable,omitempty"`
	// SampleHz is the sampling backend's rate per CPU (0: no sampler).
	SampleHz int `json:"sample_hz,omitempty"`
}

// Overhead is what zcprof's own handlers cost in the measured threads:
// the sum of their cpu.probe_ns, over the same threads' on_cpu_ns plus
// probe_ns (one scope for both). Not timed, so not in it: tracepoint
// dispatch before a handler's first clock read and the syscall slow path
// a sys_enter probe forces (NotTimed says so; make bench measures it).
type Overhead struct {
	BPFNS  uint64  `json:"bpf_ns"`
	Events uint64  `json:"events"`
	Share  float64 `json:"share"` // bpf_ns / (on_cpu_ns + probe_ns) of the same threads
	Misses uint64  `json:"recursion_misses"`
	// NSPerEvent is bpf_ns / events: one handler run, first clock read to
	// last (timed on one run in 16, bpf/common.h probe_done_est).
	NSPerEvent float64 `json:"ns_per_event"`
	// NotTimed names what zcprof costs that its handlers cannot time;
	// DispatchNS is the estimate of it per handler run, measured at start
	// with the handlers themselves on a calibrating thread and included
	// in bpf_ns.
	NotTimed   string `json:"not_timed"`
	DispatchNS uint64 `json:"dispatch_ns_per_event"`
	// HookDispatchNS is the same for the feature programs (byte classes,
	// the softirq owner split, the sampler) on other hooks: a tracepoint's
	// dispatch to its only program, measured at start, included in bpf_ns.
	HookDispatchNS uint64 `json:"hook_dispatch_ns_per_event"`
	// SampleDispatchNS is what one sample of the sampling backend costs
	// beyond its program's run (the timer interrupt, its hrtimer, perf's
	// dispatch), measured at start, included in bpf_ns per sample; absent
	// without the sampler.
	SampleDispatchNS uint64 `json:"sample_dispatch_ns_per_sample,omitempty"`
	// MapFull counts, by BPF map, the updates refused because the map was
	// full during the interval: counts that are missing.
	MapFull map[string]uint64 `json:"map_full,omitempty"`
}

// OverheadNotTimed is Overhead.NotTimed.
const OverheadNotTimed = "each event's tracepoint dispatch before the handler's first clock read and after its last, the syscall entry/exit slow path that any sys_enter/sys_exit probe forces, and what the handlers evict from the task's caches; estimated per run with the handlers themselves on a calibrating thread and counted in bpf_ns; for the feature programs on other hooks, the tracepoint's dispatch to its only program, estimated against a trivial program beside one on sys_enter; for the sampling backend, each sample's timer interrupt and perf dispatch, estimated against a trivial program on a cpu-clock event"

// ScopeOverhead fills bpf_ns, events and share from the entries the
// figures are reported for.
func ScopeOverhead(o *Overhead, entries ...CPU) {
	var measured uint64
	o.BPFNS, o.Events = 0, 0
	for _, c := range entries {
		o.BPFNS += c.ProbeNS
		o.Events += c.ProbeEvents
		measured += c.RanNS()
	}
	o.Share, o.NSPerEvent = 0, 0
	if measured > 0 {
		o.Share = float64(o.BPFNS) / float64(measured)
	}
	if o.Events > 0 {
		o.NSPerEvent = float64(o.BPFNS) / float64(o.Events)
	}
	o.NotTimed = OverheadNotTimed
}

// Process is one process (or one side of a `run` cell) with its threads.
type Process struct {
	PID      int       `json:"pid"`
	Comm     string    `json:"comm"`
	CPU      CPU       `json:"cpu"`
	Paths    []Path    `json:"paths"`
	Zerocopy *Zerocopy `json:"zerocopy"`
	Threads  []Thread  `json:"threads,omitempty"`
	// SoftirqOwner says for whose sockets its NET_RX time was (run only).
	SoftirqOwner *SoftirqOwner `json:"softirq_owner,omitempty"`
	// Host is the machine this side of a two-host run (run --remote) ran
	// and was measured on, with its own session's backends, overhead and
	// self-check.
	Host *SideHost `json:"host,omitempty"`
	// ExitedProcesses: this entry (pid 0) sums the exited processes of
	// its name, this many, that a long profile kept no row of their own
	// for (past 4,096 exited processes, those that used under 100 ms).
	ExitedProcesses int `json:"exited_processes,omitempty"`
	// Gens are the thread generations summed into this entry (not in the
	// JSON): a pid can stand for two processes in one interval, so the
	// attribution backends find an entry's threads by these.
	Gens []uint32 `json:"-"`
}

// SideHost is one side's host in a two-host run: the Host fields, and
// what that host's session used and cost.
type SideHost struct {
	Host
	Backends  Backends   `json:"backends"`
	Overhead  Overhead   `json:"overhead"`
	Precision *Precision `json:"precision,omitempty"`
}

// Thread is one thread's figures (with --threads).
type Thread struct {
	TID   int    `json:"tid"`
	Comm  string `json:"comm"`
	CPU   CPU    `json:"cpu"`
	Paths []Path `json:"paths"`
}

// CPU is on-CPU time split by context, beside the kernel's own figures.
type CPU struct {
	OnCPUNS   uint64 `json:"on_cpu_ns"`
	UserNS    uint64 `json:"user_ns"`
	KernelNS  uint64 `json:"kernel_ns"` // syscall (task context) time
	SoftirqNS uint64 `json:"softirq_ns"`
	HardirqNS uint64 `json:"hardirq_ns"`
	// Softirq by vector.
	SoftirqNetRxNS uint64 `json:"softirq_net_rx_ns"`
	SoftirqNetTxNS uint64 `json:"softirq_net_tx_ns"`
	SoftirqOtherNS uint64 `json:"softirq_other_ns"`
	// The kernel's own view of the same interval: sum_exec_runtime and the
	// tick-sampled times() split.
	SchedstatNS   uint64 `json:"schedstat_ns"`
	TimesUserNS   uint64 `json:"times_user_ns"`
	TimesSystemNS uint64 `json:"times_system_ns"`
	// UnresolvedNS is time of threads that never crossed a syscall
	// boundary while watched, so user and kernel could not be told apart;
	// it is included in KernelNS under the path "other".
	UnresolvedNS uint64 `json:"unresolved_ns,omitempty"`
	// SchedstatBoundaryNS is time sum_exec_runtime bills to this entry
	// (positive) or to others (negative) because the kernel draws some
	// context switches earlier than they happen: after a wakeup preemption
	// the rq clock is not updated again, so the rest of the waker's run
	// until the switch is billed to the woken task.
	SchedstatBoundaryNS int64 `json:"schedstat_boundary_ns"`
	// SwitchUncertainNS is time around context switches the kernel did not
	// report to sched_switch (seen on patched kernels): its split between
	// this entry and another task is unknown, by at most this much.
	SwitchUncertainNS uint64 `json:"switch_uncertain_ns,omitempty"`
	// ProbeNS is zcprof's own handlers' time in this entry (first clock
	// read to last), cut out of every figure above: on_cpu_ns is the
	// workload's, on_cpu_ns + probe_ns is what the threads ran.
	// ProbeEvents counts the handler runs timed.
	ProbeNS     uint64 `json:"probe_ns"`
	ProbeEvents uint64 `json:"probe_events"`
}

// RanNS is what the entry's threads ran: the workload's on-CPU time and
// zcprof's handlers in it (schedstat bills both).
func (c CPU) RanNS() uint64 { return c.OnCPUNS + c.ProbeNS }

// KernelViewNS is RanNS as sum_exec_runtime bills it, the schedstat
// boundary term added back: what schedstat_ns should equal.
func (c CPU) KernelViewNS() uint64 { return uint64(int64(c.RanNS()) + c.SchedstatBoundaryNS) }

// Path is one path of the taxonomy (docs/architecture.md): a syscall path, or a
// non-syscall context (user, softirq.*, hardirq). CPUNS of all paths of an
// entry add up to its on_cpu_ns.
type Path struct {
	Path  string `json:"path"`
	Calls uint64 `json:"calls"`
	Bytes uint64 `json:"bytes"`
	// CPUNS is task-context time for syscall paths and user; the whole
	// context's time for softirq.* and hardirq.
	CPUNS uint64 `json:"cpu_ns"`
	// SoftirqNS is softirq time that interrupted this path (syscall paths
	// and user only), by vector in Softirq.
	SoftirqNS  uint64            `json:"softirq_ns"`
	Softirq    map[string]uint64 `json:"softirq,omitempty"`
	HardirqNS  uint64            `json:"hardirq_ns,omitempty"`
	NSPerCall  float64           `json:"ns_per_call,omitempty"`
	NSPerMiB   float64           `json:"ns_per_mib,omitempty"` // service demand
	Categories []Category        `json:"categories"`
	// Functions are the kernel functions the function-exact backend traced
	// in this path (fentry/kprobe runs only), largest first.
	Functions []Function `json:"functions,omitempty"`
	// Zerocopy: byte classes and verdict of this path (socket paths).
	Zerocopy *Zerocopy `json:"zerocopy,omitempty"`
}

// Category is CPU inside a path (attribution issue); exact or estimated.
type Category struct {
	Category string `json:"category"`
	CPUNS    uint64 `json:"cpu_ns"`
	CI95NS   uint64 `json:"ci95_ns"`
	Exact    bool   `json:"exact"`
}

// Function is one traced kernel function's exact figures inside a path:
// inclusive time with interrupts and off-CPU time removed, the part of it
// that is its own (not in other traced functions), calls, and the bytes it
// handled (from its arguments or return value).
type Function struct {
	Function  string  `json:"function"`
	Calls     uint64  `json:"calls"`
	NS        uint64  `json:"ns"`
	SelfNS    uint64  `json:"self_ns"`
	Bytes     uint64  `json:"bytes"`
	NSPerCall float64 `json:"ns_per_call"`
}

// Zerocopy holds byte classes and the verdict.
type Zerocopy struct {
	TxBytes             uint64 `json:"tx_bytes"`
	TxCopiedBytes       uint64 `json:"tx_copied_bytes"`
	TxSplicedBytes      uint64 `json:"tx_spliced_bytes"`
	TxPinnedBytes       uint64 `json:"tx_pinned_bytes"`
	TxDeferredCopyBytes uint64 `json:"tx_deferred_copy_bytes"`
	RxCopiedBytes       uint64 `json:"rx_copied_bytes"`
	RxMappedBytes       uint64 `json:"rx_mapped_bytes"`
	Verdict             string `json:"verdict"`
	Reason              string `json:"reason"`

	// Source says what the classes come from: ZerocopySourceKernel (the
	// kernel's traced decisions) or ZerocopySourceRequest (the syscalls'
	// request only, when the byte-class programs are not loaded).
	Source string `json:"source"`
	// Parts of tx_copied_bytes with a cause other than a plain send:
	// MSG_ZEROCOPY without SO_ZEROCOPY, zero-copy or splice on a route
	// without scatter-gather, splice from a source that cannot splice.
	TxCopiedZCIgnoredBytes uint64 `json:"tx_copied_zc_ignored_bytes"`
	TxCopiedNoSGBytes      uint64 `json:"tx_copied_no_sg_bytes"`
	TxSourceCopiedBytes    uint64 `json:"tx_source_copied_bytes"`
	// Sent bytes whose decision was not seen (send begun before attach).
	TxUnclassifiedBytes uint64 `json:"tx_unclassified_bytes"`
	// Where the deferred copies happened (loopback, veth, packet_tap,
	// other): every copy, retransmissions included.
	TxDeferredVia map[string]uint64 `json:"tx_deferred_copy_via,omitempty"`
	// Deferred copies of retransmitted zero-copy skbs: copied again, not
	// part of tx_deferred_copy_bytes (which counts each pinned byte once).
	TxDeferredRecopyBytes uint64 `json:"tx_deferred_recopy_bytes"`
	// MSG_ZEROCOPY sends completed on the error queue plus io_uring
	// notifications; of those, reported COPIED by the kernel. Traced with
	// source kernel; with source request, what run's workload read.
	ZCCompletions       uint64 `json:"zc_completions"`
	ZCCompletionsCopied uint64 `json:"zc_completions_copied"`
	// Part of tx_copied_bytes: copied into records by a TCP upper-layer
	// protocol (kTLS) before it spliced them.
	TxCopiedULPBytes uint64 `json:"tx_copied_ulp_bytes"`
	// Receive paths besides a copy or a mapping: bytes spliced out of
	// sockets into pipes (rx.splice), and bytes a receive call returned
	// that were never copied to user memory (recv with MSG_TRUNC).
	RxSplicedBytes   uint64 `json:"rx_spliced_bytes"`
	RxDiscardedBytes uint64 `json:"rx_discarded_bytes"`
	// Estimated names the byte fields of this object that are estimates,
	// not counts (e.g. tx_deferred_copy_bytes in proportion to COPIED
	// completions when the byte-class programs are not loaded).
	Estimated []string `json:"estimated,omitempty"`
	// Unavailable names the byte-class sources this object's verdict
	// depends on that could not be attached (of
	// backends.byte_classes_unavailable): their bytes are not counted, and
	// the verdict says it cannot tell what they would show.
	Unavailable []string `json:"unavailable,omitempty"`
	// Names are the syscalls the verdict names (set by Judge), to judge
	// again after a figure changes; not part of the JSON contract.
	Names VerdictNames `json:"-"`
}

// Zerocopy sources.
const (
	ZerocopySourceKernel  = "kernel"
	ZerocopySourceRequest = "request"
)

// System is interrupt time that ran while no target was current.
type System struct {
	Paths []Path `json:"paths"` // system.idle, system.ksoftirqd, system.other_task
	CPU   CPU    `json:"cpu"`
}

// Precision is zcprof's self-check against sum_exec_runtime: its own
// totals against the kernel's as they are, the difference explained term by
// term (DiffNS = Terms.BoundaryNS + Terms.IRQTimeNS + ResidualNS), each
// bounded. Sums are over the checked threads.
type Precision struct {
	Checked   int `json:"checked_threads"`
	Failed    int `json:"failed_threads"`
	Unchecked int `json:"unchecked_threads"`
	// MaxErrPct is the largest residual relative to schedstat (what the
	// bound applies to); MaxDiffPct the largest raw difference.
	MaxErrPct  float64 `json:"max_error_pct"`
	MaxDiffPct float64 `json:"max_diff_pct"`
	Bound      string  `json:"bound"`

	MeasuredNS  uint64         `json:"measured_ns"`
	SchedstatNS uint64         `json:"schedstat_ns"`
	DiffNS      int64          `json:"diff_ns"`
	Terms       PrecisionTerms `json:"terms"`
	ResidualNS  int64          `json:"residual_ns"`
	ClampedRuns uint64         `json:"clamped_runs"`
}

// PrecisionTerms are the known reasons zcprof's on-CPU time and
// sum_exec_runtime differ.
type PrecisionTerms struct {
	// BoundaryNS: the kernel ends runs where it last read the rq clock,
	// which after a wakeup preemption is the wakeup: the rest of the
	// waker's run is billed to the woken task. Measured per run (runs
	// compared: Runs); it holds stolen time too, which cannot be told
	// apart per thread. BoundaryBoundNS is its bound without steal.
	BoundaryNS      int64  `json:"boundary_ns"`
	BoundaryBoundNS uint64 `json:"boundary_bound_ns"`
	Runs            uint64 `json:"runs"`
	// IRQTimeNS: softirq and hardirq time the kernel leaves out of
	// sum_exec_runtime (CONFIG_IRQ_TIME_ACCOUNTING; else 0).
	IRQTimeNS int64 `json:"irq_time_ns"`
	// StealBoundNS: the host's stolen time over the interval, all CPUs,
	// when the kernel leaves it out (CONFIG_PARAVIRT_TIME_ACCOUNTING);
	// each thread's boundary term may hold up to this much of it.
	StealBoundNS uint64 `json:"steal_bound_ns"`
	// SwitchUncertainNS: time around context switches the kernel did not
	// report, whose owner is unknown; the residual bound grows by it.
	SwitchUncertainNS uint64 `json:"switch_uncertain_ns"`
}

// Side is one side of a cell: its name ("sender", "receiver"), its
// entry and its service demand.
type Side struct {
	Name     string
	Process  Process
	NSPerMiB float64
}

// Sides returns the cell's sender and receiver, in that order.
func (c Cell) Sides() []Side {
	return []Side{{"sender", c.Sender, c.SenderNSPerMiB}, {"receiver", c.Receiver, c.ReceiverNSPerMiB}}
}

// Cell is one cell of a `zcprof run` matrix. With repeats, every figure is
// the mean over the repeats and Stats holds the confidence intervals.
type Cell struct {
	Method        string  `json:"method"`
	RxMethod      string  `json:"rx_method"`
	Size          int     `json:"size"`
	Streams       int     `json:"streams"`
	ThroughputBps float64 `json:"throughput_bps"`
	Sender        Process `json:"sender"`
	Receiver      Process `json:"receiver"`

	Topology string `json:"topology"`
	Repeats  int    `json:"repeats"`
	// Service demand: each side's on-CPU ns per MiB received.
	SenderNSPerMiB   float64 `json:"sender_ns_per_mib"`
	ReceiverNSPerMiB float64 `json:"receiver_ns_per_mib"`
	// Workload is what the generator itself counted.
	Workload *Workload `json:"workload,omitempty"`
	// Stats: per figure ("throughput_bps", "sender.on_cpu_ns", ...), over
	// the repeats (absent after a single run).
	Stats map[string]Stat `json:"stats,omitempty"`
	// ConfidenceReached is set with --ci: whether the interval target was
	// met within the allowed repeats.
	ConfidenceReached *bool    `json:"confidence_reached,omitempty"`
	Verdicts          []string `json:"verdicts,omitempty"`
}

// Workload holds the facts the generator observed itself (totals over all
// streams; means with repeats).
type Workload struct {
	ElapsedNS     uint64 `json:"elapsed_ns"`
	SentBytes     uint64 `json:"sent_bytes"`
	ReceivedBytes uint64 `json:"received_bytes"`
	SendCalls     uint64 `json:"send_calls"` // io_uring: SQEs
	RecvCalls     uint64 `json:"recv_calls"`
	// MSG_ZEROCOPY: sends covered by error-queue notifications;
	// io_uring_zc: notification CQEs. Copied: of those, flagged COPIED.
	ZCCompletions   uint64 `json:"zc_completions"`
	ZCCopied        uint64 `json:"zc_copied"`
	ZCNotifications uint64 `json:"zc_notifications"`
	// TCP_ZEROCOPY_RECEIVE: bytes mapped vs copied.
	RxMappedBytes uint64 `json:"rx_mapped_bytes"`
	RxCopiedBytes uint64 `json:"rx_copied_bytes"`
	PayloadErrors uint64 `json:"payload_errors"`
	Congestion    string `json:"congestion"` // the senders' TCP congestion control
	// MSS is the senders' MSS as their handshakes settled it (the
	// largest over streams): the path's, or --mss.
	MSS int `json:"mss,omitempty"`
	// TxDevice is the device the senders' bytes left through, read on the
	// sending host at setup; TxDeviceNoSG: it had scatter-gather off.
	TxDevice     string `json:"tx_device,omitempty"`
	TxDeviceNoSG bool   `json:"tx_device_no_sg,omitempty"`
}

// SoftirqOwner splits an entry's NET_RX softirq time (exact, the CPU's
// softirq_net_rx_ns) by whose socket the work was for: its own side's
// sockets, the peer's, or unattributed. The split is an estimate: each
// skb's processing is timed from its entry into the stack to the next
// one, and the exact total is divided in proportion.
type SoftirqOwner struct {
	NetRxNS        uint64 `json:"net_rx_ns"`
	ForOwnNS       uint64 `json:"softirq_for_own_ns"`
	ForPeerNS      uint64 `json:"softirq_for_peer_ns"`
	UnattributedNS uint64 `json:"softirq_unattributed_ns"`
	// Segments (tcp_rcv_established) and new payload bytes processed in
	// this entry's NET_RX for each side's sockets.
	OwnSegments  uint64 `json:"own_segments"`
	PeerSegments uint64 `json:"peer_segments"`
	OwnBytes     uint64 `json:"own_bytes"`
	PeerBytes    uint64 `json:"peer_bytes"`
	Estimate     bool   `json:"estimate"`
	Method       string `json:"method"`
}

// Stat is one figure over repeats: mean and confidence interval (Student t).
type Stat struct {
	N     int     `json:"n"`
	Mean  float64 `json:"mean"`
	SD    float64 `json:"sd"`
	Level float64 `json:"level"`   // e.g. 0.95
	CI    float64 `json:"ci_half"` // half-width of the interval
}

// Merge adds another check's figures to p (several runs of one command).
func (p *Precision) Merge(o *Precision) {
	p.Checked += o.Checked
	p.Failed += o.Failed
	p.Unchecked += o.Unchecked
	p.MaxErrPct = max(p.MaxErrPct, o.MaxErrPct)
	p.MaxDiffPct = max(p.MaxDiffPct, o.MaxDiffPct)
	p.MeasuredNS += o.MeasuredNS
	p.SchedstatNS += o.SchedstatNS
	p.DiffNS += o.DiffNS
	p.ResidualNS += o.ResidualNS
	p.ClampedRuns += o.ClampedRuns
	t, u := &p.Terms, o.Terms
	t.BoundaryNS += u.BoundaryNS
	t.BoundaryBoundNS += u.BoundaryBoundNS
	t.Runs += u.Runs
	t.IRQTimeNS += u.IRQTimeNS
	t.StealBoundNS += u.StealBoundNS
	t.SwitchUncertainNS += u.SwitchUncertainNS
}
