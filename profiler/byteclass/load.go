package byteclass

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/ksym"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// Byte-class backends: how send decisions are observed.
const (
	// Decision replicates tcp_sendmsg_locked's decision from
	// the tcp:tcp_sendmsg_locked tracepoint (6.16+).
	Decision = "tcp_sendmsg_locked"
	// Syscall infers it from the syscall path, the socket's
	// SOCK_ZEROCOPY flag and route caps, and io_uring's submitted opcode.
	Syscall = "syscall"
	// SyscallReturn is the same inference with the bytes taken
	// from send syscalls' return values, for kernels without the
	// sock:sock_send_length tracepoint (before 6.3); io_uring sends are
	// not classified.
	SyscallReturn = "syscall_return"
	// Off loads no byte-class program: the verdicts show the syscall
	// request only.
	Off = "off"
)

// Choices are the values --byte-classes (profiler.Options.ByteClasses)
// takes, for the CLI's check and the session's alike (kernel.Choose).
func Choices() []string {
	return []string{kernel.Auto, Decision, Syscall, SyscallReturn, Off}
}

// Loaded is the loaded zcbytes object: programs attached one by one
// (a kernel that lacks one tracepoint loses only what it provides).
type Loaded struct {
	mode string // Decision, Syscall or SyscallReturn; "" = no send classes
	// inferred: the paths whose copies are not traced but taken from
	// their bytes (TxWritesCopy).
	inferred []PathClass
	maps     *ebpf.Collection
	colls    []*ebpf.Collection
	links    []link.Link
	progs    []*ebpf.Program
}

// zcbPoint is one program and where it attaches: a tp_btf tracepoint, or a
// classic tracepoint (group/name) where the BTF prototype is not stable or
// a per-syscall event is far cheaper than sys_enter.
type zcbPoint struct {
	prog, group, name string
	lost              string // unavailable key when it fails
}

var (
	zcbDecision = zcbPoint{prog: "zcb_tcp_sendmsg_locked", name: "tcp_sendmsg_locked"}
	zcbSend     = zcbPoint{prog: "zcb_sock_send_length", name: "sock_send_length",
		lost: "byte classes: sends"}
	zcbUring    = zcbPoint{prog: "zcb_uring_submit", name: "io_uring_submit_req"}
	zcbUringSQE = zcbPoint{prog: "zcb_uring_submit_sqe", name: "io_uring_submit_sqe",
		lost: "byte classes: io_uring send kind"}
	zcbRetransmitErr = zcbPoint{prog: "zcb_retransmit_err", name: "tcp_retransmit_skb"}
	zcbRetransmit    = zcbPoint{prog: "zcb_retransmit", name: "tcp_retransmit_skb",
		lost: "byte classes: retransmitted zero-copy bytes"}
	// Kernels without sock_send_length: every send syscall's entry (the
	// socket) and exit (the bytes).
	zcbSendSyscalls = append(syscallPoints("zcb_se_", "sys_enter_", sendSyscalls...),
		syscallPoints("zcb_sx_", "sys_exit_", sendSyscalls...)...)
	// The deferred copies of pinned pages: every skb of the host passes
	// these hooks, and only a zero-copy skb counts (Options.NoPinnedSends).
	zcbDeferred = []zcbPoint{
		{prog: "zcb_netif_receive_skb", name: "netif_receive_skb", lost: "byte classes: deferred copies on local delivery"},
		{prog: "zcb_net_dev_start_xmit", name: "net_dev_start_xmit", lost: "byte classes: deferred copies for packet taps"},
	}
	zcbOthers = append(slices.Clone(zcbDeferred), []zcbPoint{
		{prog: "zcb_error_report", name: "inet_sk_error_report", lost: "byte classes: MSG_ZEROCOPY completions"},
		{prog: "zcb_uring_complete", group: "io_uring", name: "io_uring_complete", lost: "byte classes: io_uring notifications"},
	}...)
	// What the accounting's own syscall handlers note for the byte
	// classes (cfg_byte_classes in bpf/accounting.bpf.c): no program of
	// their own to attach, but the source checks need kernel addresses.
	// They also count receive copies (a TCP receive copies all it returns
	// unless MSG_TRUNC) and TCP_ZEROCOPY_RECEIVE's mapped and copied
	// bytes, which need nothing.
	sourceCheckLost = []string{UnavailablePrefix + "sendfile sources that cannot splice", UnavailablePrefix + "splice sources that cannot splice"}
)

// lostSources are the byte-class sources a session may lack, each the
// unavailable key "byte classes: <source>" of the programs that provide it.
func lostSources() map[string]bool {
	lost := map[string]bool{}
	for _, p := range append([]zcbPoint{zcbSend, zcbUringSQE, zcbRetransmit}, zcbOthers...) {
		lost[strings.TrimPrefix(p.lost, UnavailablePrefix)] = true
	}
	for _, k := range sourceCheckLost {
		lost[strings.TrimPrefix(k, UnavailablePrefix)] = true
	}
	return lost
}

// UnavailablePrefix starts the unavailable key of each byte-class source
// ("byte classes: <source>").
const UnavailablePrefix = "byte classes: "

// ClassicLost are the unavailable keys of the programs that attach to
// classic tracepoints (ids read from tracefs).
func ClassicLost() map[string]bool {
	lost := map[string]bool{}
	for _, p := range zcbOthers {
		if p.group != "" {
			lost[p.lost] = true
		}
	}
	return lost
}

// SourcesUnavailable lists the byte-class sources a session's unavailable
// map names (their bytes are not counted; the reasons are under
// "byte classes: <source>"), sorted.
func SourcesUnavailable(unavailable map[string]string) []string {
	lost := lostSources()
	var out []string
	for k := range unavailable {
		if src, ok := strings.CutPrefix(k, UnavailablePrefix); ok && lost[src] {
			out = append(out, src)
		}
	}
	sort.Strings(out)
	return out
}

// Options says which byte classes a session needs.
type Options struct {
	// Want is "", "auto", Decision, Syscall, SyscallReturn or Off.
	Want string
	// NoPinnedSends: the targets make no MSG_ZEROCOPY or io_uring SEND_ZC
	// sends (zcprof run knows its method), so no skb of theirs can be
	// copied later: the deferred-copy programs, which every skb of the
	// host passes, are not attached (nor reported missing).
	NoPinnedSends bool
	// NoUringSends: the targets make no io_uring sends (zcprof run knows
	// its method). Every other send's class follows from its syscall and
	// its socket's state as tcp_sendmsg_locked's decision does (the same
	// flag, SO_ZEROCOPY and route checks; the byte-class tests hold every
	// mode to the same counts), so "auto" infers it (Syscall) and leaves
	// out tcp_sendmsg_locked, which fires for every skb a send builds:
	// 3.4 program runs per 64 KiB write here, 17% of a write run's events.
	// The io_uring submission hook is left out too.
	NoUringSends bool
	// TxWritesCopy: the targets send only by plain writes (zcprof run
	// knows its method), and a write copies every byte it sends. With
	// send classes inferred from the syscall (Syscall, which "auto" takes
	// where NoUringSends), the send hook (sock_send_length), one program
	// run per send call, is left out, and the bytes tx.write sent are its
	// copies (Inferred).
	TxWritesCopy bool
}

// Open loads the byte-class programs on top of the accounting's maps
// (shared: the session's, for the threads map). setHookDispatch sets the
// object's cfg_hook_dispatch_ns before load (profiler.SetHookDispatch).
// Failures are recorded in unavailable, never fatal: nil, nil when
// nothing could be loaded or byte classes are off.
func Open(shared map[string]*ebpf.Map, o Options, unavailable map[string]string, setHookDispatch func(*ebpf.CollectionSpec) error) (*Loaded, error) {
	want := o.Want
	if want == "" {
		want = kernel.Auto
	}
	if err := kernel.Choose("byte classes", " backend", want, Choices()); err != nil {
		return nil, err
	}
	if want == Off {
		unavailable["byte classes"] = "turned off: zero-copy verdicts show the syscall request only"
		return nil, nil
	}
	spec, err := byteClassSpec(setHookDispatch)
	if err == nil && !ksym.AddressesVisible() {
		// The source check compares f_op->splice_read with
		// copy_splice_read's address: hidden, it never matches.
		for _, k := range sourceCheckLost {
			unavailable[k] = "/proc/kallsyms hides kernel addresses from this process (reading them needs CAP_SYSLOG): only O_DIRECT and DAX sources are recognised"
		}
	}
	if want == kernel.Auto && o.NoUringSends {
		want = Syscall
	}
	if err == nil {
		var b *Loaded
		if b, err = loadMaps(spec, shared); err == nil {
			return b.attachAll(spec, want, o, unavailable), nil
		}
	}
	unavailable["byte classes"] = err.Error()
	return nil, nil
}

// attachAll attaches what this kernel has. Send decisions come from the
// first backend that works (or the one asked for): tcp_sendmsg_locked with
// sock_send_length (6.16+), sock_send_length with the syscall inference
// (6.3+), or the send syscalls' returns with the same inference.
func (b *Loaded) attachAll(spec *ebpf.CollectionSpec, want string, o Options, unavailable map[string]string) *Loaded {
	try := func(p zcbPoint) error {
		err := b.attach(spec, p)
		if err != nil && p.lost != "" {
			unavailable[p.lost] = err.Error()
		}
		return err
	}
	if o.TxWritesCopy && o.NoUringSends && want == Syscall {
		b.mode = Syscall
		b.inferred = append(b.inferred, PathClass{taxonomy.PathTxWrite, ClassTxCopyWrite})
		b.attachOthers(spec, o, try)
		return b
	}
	var sendErr, decisionErr error
	if want != SyscallReturn {
		sendErr = b.attach(spec, zcbSend)
	}
	if want != SyscallReturn && want != Syscall && sendErr == nil {
		decisionErr = b.attach(spec, zcbDecision)
	}
	switch {
	case want == SyscallReturn || sendErr != nil:
		// Before 6.3: bytes from the send syscalls' return values;
		// io_uring sends return none, so their kind is not needed.
		if sendErr != nil {
			unavailable["byte classes: sock_send_length"] = sendErr.Error() + "; send bytes from syscall returns (io_uring sends not classified)"
			if want != Syscall {
				// Not tried: its events carry no byte count, which
				// comes from sock_send_length (6.3, the decision 6.16).
				unavailable["byte classes: "+Decision] = "not tried: tcp_sendmsg_locked decisions need sock_send_length's byte counts, which this kernel lacks; send classes inferred from the syscall and socket state"
			}
		}
		b.mode = SyscallReturn
		for _, p := range zcbSendSyscalls {
			if err := b.attach(spec, p); err != nil {
				unavailable["byte classes: sends"] = err.Error()
				b.mode = ""
				break
			}
		}
	case want != Syscall && decisionErr == nil:
		b.mode = Decision
	default:
		if decisionErr != nil {
			unavailable["byte classes: "+Decision] = decisionErr.Error() + "; send classes inferred from the syscall and socket state"
		}
		b.mode = Syscall
		// The tracepoint was io_uring_submit_sqe before 6.4.
		if !o.NoUringSends && b.attach(spec, zcbUring) != nil {
			try(zcbUringSQE)
		}
	}
	b.attachOthers(spec, o, try)
	return b
}

// attachOthers attaches what does not decide a send's class: later copies,
// completions, retransmissions.
func (b *Loaded) attachOthers(spec *ebpf.CollectionSpec, o Options, try func(zcbPoint) error) {
	for _, p := range zcbOthers {
		if o.NoPinnedSends && slices.Contains(zcbDeferred, p) {
			continue
		}
		try(p)
	}
	// tcp_retransmit_skb gained an err argument in 6.13: try that first.
	if b.attach(spec, zcbRetransmitErr) != nil {
		try(zcbRetransmit)
	}
}

var sendSyscalls = []string{"write", "writev", "sendto", "sendmsg", "sendfile64", "splice"}

func syscallPoints(prog, event string, names ...string) []zcbPoint {
	var out []zcbPoint
	for _, n := range names {
		out = append(out, zcbPoint{prog: prog + n, group: "syscalls", name: event + n})
	}
	return out
}

// byteClassSpec is the compiled object with its constants set.
func byteClassSpec(setHookDispatch func(*ebpf.CollectionSpec) error) (*ebpf.CollectionSpec, error) {
	spec, err := bpf.LoadZcbytes()
	if err != nil {
		return nil, fmt.Errorf("parse zcbytes object: %w", err)
	}
	if err := setHookDispatch(spec); err != nil {
		return nil, err
	}
	syms := ksym.Addrs(map[string]string{"ptype_all": "DdBb", "net_hotdata": "DdBb"})
	if addr := globalPtypeAll(syms); addr != 0 {
		if err := spec.Variables["cfg_ptype_all"].Set(addr); err != nil {
			return nil, err
		}
	}
	return spec, nil
}

// SetupAccounting readies the byte-class side of the accounting object
// before it is loaded: its syscall handlers note, for the byte classes,
// what only a syscall shows (want is --byte-classes), and it owns the
// byte-class counters (zcb_stats), which this package's programs take
// over.
func SetupAccounting(spec *ebpf.CollectionSpec, want string) error {
	if want == Off {
		return nil
	}
	if err := spec.Variables["cfg_byte_classes"].Set(uint32(1)); err != nil {
		return err
	}
	if addr := ksym.Addrs(map[string]string{"copy_splice_read": "Tt"})["copy_splice_read"]; addr != 0 {
		if err := spec.Variables["cfg_copy_splice_read"].Set(addr); err != nil {
			return err
		}
	}
	// PREEMPT_RT refills the BPF allocator's caches from a thread: in the
	// 6.12-rt guest, 1-3 inserts per transfer found them empty and lost a
	// send's or a deferred copy's bytes. Elsewhere none were seen, and the
	// map stays allocated at insert.
	if kernel.ReadHost().PreemptRT {
		return preallocateStats(spec)
	}
	return nil
}

// preallocateStats: the byte-class counters preallocated, as on PREEMPT_RT.
func preallocateStats(accounting *ebpf.CollectionSpec) error {
	m := accounting.Maps["zcb_stats"]
	m.MaxEntries = min(m.MaxEntries, rtStatsEntries)
	_, err := bpf.Preallocate(m)
	return err
}

// rtStatsEntries bounds the preallocated byte-class map of a PREEMPT_RT
// kernel (each entry holds a value per possible CPU).
const rtStatsEntries = 16384

// globalPtypeAll is the address of the list of packet taps on every
// device, where the kernel keeps one global list: ptype_all until 6.8,
// net_hotdata.ptype_all after, until it moved into struct net (0 then, or
// when kallsyms hides data symbols).
func globalPtypeAll(syms map[string]uint64) uint64 {
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		return 0
	}
	if memberOffset(kernel, "net", "ptype_all") >= 0 {
		return 0 // per namespace: the BPF side reads struct net
	}
	if off := memberOffset(kernel, "net_hotdata", "ptype_all"); off >= 0 && syms["net_hotdata"] != 0 {
		return syms["net_hotdata"] + uint64(off)
	}
	return syms["ptype_all"]
}

// memberOffset is a struct member's byte offset in kernel BTF, -1 if absent.
func memberOffset(spec *btf.Spec, typ, member string) int {
	var s *btf.Struct
	if err := spec.TypeByName(typ, &s); err != nil {
		return -1
	}
	for _, m := range s.Members {
		if m.Name == member {
			return int(m.Offset.Bytes())
		}
	}
	return -1
}

// loadMaps creates the object's own maps and takes the shared ones
// (threads) from the accounting.
func loadMaps(spec *ebpf.CollectionSpec, shared map[string]*ebpf.Map) (*Loaded, error) {
	repl := map[string]*ebpf.Map{}
	for name, ms := range spec.Maps {
		if m, ok := shared[name]; ok && !strings.HasPrefix(name, ".") {
			repl[name] = m
			// As the accounting sized it (on PREEMPT_RT zcb_stats is
			// smaller and preallocated, SetupAccounting): a declaration
			// that differs is refused as incompatible, here and by every
			// program's load (loadProgram), which copies spec.
			ms.MaxEntries, ms.Flags = m.MaxEntries(), m.Flags()
		}
	}
	s := spec.Copy()
	s.Programs = map[string]*ebpf.ProgramSpec{}
	if repl["threads"] == nil || repl["zcb_stats"] == nil {
		return nil, errors.New("the accounting has no threads or zcb_stats map")
	}
	coll, err := ebpf.NewCollectionWithOptions(s, ebpf.CollectionOptions{MapReplacements: repl, Cache: bpf.KernelBTF})
	if err != nil {
		return nil, fmt.Errorf("zcbytes maps: %w", err)
	}
	b := &Loaded{maps: coll}
	return b, nil
}

func (b *Loaded) attach(spec *ebpf.CollectionSpec, p zcbPoint) error {
	coll, err := loadProgram(spec, p.prog, b.maps.Maps)
	if err != nil {
		return fmt.Errorf("load %s: %w", p.name, bpf.ShortError(err))
	}
	prog := coll.Programs[p.prog]
	var lk link.Link
	if p.group != "" {
		lk, err = link.Tracepoint(p.group, p.name, prog, nil)
	} else {
		lk, err = link.AttachTracing(link.TracingOptions{Program: prog})
	}
	if err != nil {
		coll.Close()
		return fmt.Errorf("attach %s: %w", p.name, err)
	}
	b.colls = append(b.colls, coll)
	b.links = append(b.links, lk)
	b.progs = append(b.progs, prog)
	return nil
}

// Mode says how send decisions are observed (Decision, Syscall or
// SyscallReturn), "" when no send is classified.
func (b *Loaded) Mode() string { return b.mode }

// Programs are the attached programs, for the session's overhead figures
// and program ids (Close still closes them).
func (b *Loaded) Programs() []*ebpf.Program { return b.progs }

// Inferred lists the paths whose bytes are their copies rather than
// traced ones (TxWritesCopy), each with the class the session
// counts them in (InferCopies).
func (b *Loaded) Inferred() []PathClass { return b.inferred }

// InferCopies adds to counts, for each generation, a path's bytes and
// calls (totals) as copies of class pc.Class, where Inferred lists pc.
func InferCopies(counts map[Key]Count, pc PathClass, totals map[uint32]Count) {
	for gen, c := range totals {
		if c.Bytes > 0 {
			counts[Key{gen, pc.Path, pc.Class}] = c
		}
	}
}

// Close detaches every program and frees the maps.
func (b *Loaded) Close() error {
	var errs []error
	for _, lk := range b.links {
		errs = append(errs, lk.Close())
	}
	for _, c := range b.colls {
		c.Close()
	}
	if b.maps != nil {
		b.maps.Close()
	}
	b.links, b.colls, b.progs, b.maps = nil, nil, nil, nil
	return errors.Join(errs...)
}

// loadProgram loads one program of spec on the maps of an earlier load.
func loadProgram(spec *ebpf.CollectionSpec, name string, maps map[string]*ebpf.Map) (*ebpf.Collection, error) {
	s := spec.Copy()
	for n := range s.Programs {
		if n != name {
			delete(s.Programs, n)
		}
	}
	return ebpf.NewCollectionWithOptions(s, ebpf.CollectionOptions{MapReplacements: maps, Cache: bpf.KernelBTF})
}
