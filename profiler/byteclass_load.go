package profiler

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"github.com/zcprof/zcprof/bpf"
)

// byteClasses is the loaded zcbytes object: programs attached one by one
// (a kernel that lacks one tracepoint loses only what it provides).
type byteClasses struct {
	mode    string // ByteClassesDecision or ByteClassesSyscall; "" = no send classes
	maps    *ebpf.Collection
	colls   []*ebpf.Collection
	links   []link.Link
	progs   []*ebpf.Program
	stats   *ebpf.Map
	dropped *ebpf.Variable
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
	zcbOthers = []zcbPoint{
		{prog: "zcb_netif_receive_skb", name: "netif_receive_skb", lost: "byte classes: deferred copies on local delivery"},
		{prog: "zcb_net_dev_start_xmit", name: "net_dev_start_xmit", lost: "byte classes: deferred copies for packet taps"},
		{prog: "zcb_error_report", name: "inet_sk_error_report", lost: "byte classes: MSG_ZEROCOPY completions"},
		{prog: "zcb_uring_complete", group: "io_uring", name: "io_uring_complete", lost: "byte classes: io_uring notifications"},
		{prog: "zcb_rx_copy", name: "skb_copy_datagram_iovec", lost: "byte classes: receive copies"},
		{prog: "zcb_enter_getsockopt", group: "syscalls", name: "sys_enter_getsockopt", lost: "byte classes: TCP_ZEROCOPY_RECEIVE mapped bytes"},
		{prog: "zcb_exit_getsockopt", group: "syscalls", name: "sys_exit_getsockopt", lost: "byte classes: TCP_ZEROCOPY_RECEIVE mapped bytes"},
		{prog: "zcb_enter_sendfile", group: "syscalls", name: "sys_enter_sendfile64", lost: "byte classes: sendfile sources that cannot splice"},
		{prog: "zcb_enter_splice", group: "syscalls", name: "sys_enter_splice", lost: "byte classes: splice sources that cannot splice"},
		{prog: "zcb_enter_vmsplice", group: "syscalls", name: "sys_enter_vmsplice", lost: "byte classes: splice sources that cannot splice"},
	}
)

// openByteClasses loads the byte-class programs on top of the session's
// maps. want is "", "auto", ByteClassesDecision, ByteClassesSyscall or
// ByteClassesOff. Failures are recorded in unavailable, never fatal.
func openByteClasses(shared map[string]*ebpf.Map, want string, unavailable map[string]string) (*byteClasses, error) {
	switch want {
	case "", "auto", ByteClassesDecision, ByteClassesSyscall, ByteClassesSyscallReturn:
	case ByteClassesOff:
		unavailable["byte classes"] = "turned off: zero-copy verdicts show the syscall request only"
		return nil, nil
	default:
		return nil, fmt.Errorf("byte classes %q: unknown backend (use auto, %s, %s, %s or %s)", want,
			ByteClassesDecision, ByteClassesSyscall, ByteClassesSyscallReturn, ByteClassesOff)
	}
	spec, err := byteClassSpec()
	if err == nil {
		var b *byteClasses
		if b, err = loadByteClassMaps(spec, shared); err == nil {
			return b.attachAll(spec, want, unavailable), nil
		}
	}
	unavailable["byte classes"] = err.Error()
	return nil, nil
}

// attachAll attaches what this kernel has. Send decisions come from the
// first backend that works (or the one asked for): tcp_sendmsg_locked with
// sock_send_length (6.16+), sock_send_length with the syscall inference
// (6.3+), or the send syscalls' returns with the same inference.
func (b *byteClasses) attachAll(spec *ebpf.CollectionSpec, want string, unavailable map[string]string) *byteClasses {
	try := func(p zcbPoint) error {
		err := b.attach(spec, p)
		if err != nil && p.lost != "" {
			unavailable[p.lost] = err.Error()
		}
		return err
	}
	var sendErr, decisionErr error
	if want != ByteClassesSyscallReturn {
		sendErr = b.attach(spec, zcbSend)
	}
	if want != ByteClassesSyscallReturn && want != ByteClassesSyscall && sendErr == nil {
		decisionErr = b.attach(spec, zcbDecision)
	}
	switch {
	case want == ByteClassesSyscallReturn || sendErr != nil:
		// Before 6.3: bytes from the send syscalls' return values;
		// io_uring sends return none, so their kind is not needed.
		if sendErr != nil {
			unavailable["byte classes: sock_send_length"] = sendErr.Error() + "; send bytes from syscall returns (io_uring sends not classified)"
			if want != ByteClassesSyscall {
				// Not tried: its events carry no byte count, which
				// comes from sock_send_length (6.3, the decision 6.16).
				unavailable["byte classes: "+ByteClassesDecision] = "not tried: tcp_sendmsg_locked decisions need sock_send_length's byte counts, which this kernel lacks; send classes inferred from the syscall and socket state"
			}
		}
		b.mode = ByteClassesSyscallReturn
		for _, p := range zcbSendSyscalls {
			if err := b.attach(spec, p); err != nil {
				unavailable["byte classes: sends"] = err.Error()
				b.mode = ""
				break
			}
		}
	case want != ByteClassesSyscall && decisionErr == nil:
		b.mode = ByteClassesDecision
	default:
		if decisionErr != nil {
			unavailable["byte classes: "+ByteClassesDecision] = decisionErr.Error() + "; send classes inferred from the syscall and socket state"
		}
		b.mode = ByteClassesSyscall
		// The tracepoint was io_uring_submit_sqe before 6.4.
		if b.attach(spec, zcbUring) != nil {
			try(zcbUringSQE)
		}
	}
	for _, p := range zcbOthers {
		try(p)
	}
	// tcp_retransmit_skb gained an err argument in 6.13: try that first.
	if b.attach(spec, zcbRetransmitErr) != nil {
		try(zcbRetransmit)
	}
	return b
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
func byteClassSpec() (*ebpf.CollectionSpec, error) {
	spec, err := bpf.LoadZcbytes()
	if err != nil {
		return nil, fmt.Errorf("parse zcbytes object: %w", err)
	}
	syms := kallsymsAddrs(map[string]string{"copy_splice_read": "Tt", "ptype_all": "DdBb", "net_hotdata": "DdBb"})
	if addr := syms["copy_splice_read"]; addr != 0 {
		if err := spec.Variables["cfg_copy_splice_read"].Set(addr); err != nil {
			return nil, err
		}
	}
	if addr := globalPtypeAll(syms); addr != 0 {
		if err := spec.Variables["cfg_ptype_all"].Set(addr); err != nil {
			return nil, err
		}
	}
	return spec, nil
}

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

// loadByteClassMaps creates the object's own maps and takes the shared
// ones (threads) from the accounting.
func loadByteClassMaps(spec *ebpf.CollectionSpec, shared map[string]*ebpf.Map) (*byteClasses, error) {
	s := spec.Copy()
	s.Programs = map[string]*ebpf.ProgramSpec{}
	repl := map[string]*ebpf.Map{}
	for name := range s.Maps {
		if m, ok := shared[name]; ok && !strings.HasPrefix(name, ".") {
			repl[name] = m
		}
	}
	if repl["threads"] == nil {
		return nil, errors.New("the accounting has no threads map")
	}
	coll, err := ebpf.NewCollectionWithOptions(s, ebpf.CollectionOptions{MapReplacements: repl, Cache: bpf.KernelBTF})
	if err != nil {
		return nil, fmt.Errorf("zcbytes maps: %w", err)
	}
	b := &byteClasses{maps: coll, stats: coll.Maps["zcb_stats"], dropped: coll.Variables["zcb_dropped"]}
	return b, nil
}

func (b *byteClasses) attach(spec *ebpf.CollectionSpec, p zcbPoint) error {
	coll, err := loadGroup(spec, []string{p.prog}, b.maps.Maps)
	if err != nil {
		return fmt.Errorf("load %s: %w", p.name, shortVerifierError(err))
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

// read adds the current counters to snap.
func (b *byteClasses) read(snap *Snapshot) error {
	var (
		k      bpf.ZcbytesZcbKey
		perCPU []bpf.ZcbytesZcbVal
	)
	snap.ByteClasses = map[ByteKey]ByteCount{}
	it := b.stats.Iterate()
	for it.Next(&k, &perCPU) {
		var c ByteCount
		for _, v := range perCPU {
			c = c.add(ByteCount{v.Bytes, v.Events})
		}
		snap.ByteClasses[ByteKey{k.Gen, Path(k.Path), ByteClass(k.Class)}] = c
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("read byte classes: %w", err)
	}
	var dropped uint64
	if err := b.dropped.Get(&dropped); err == nil {
		snap.ByteClassDrops = dropped
	}
	return nil
}

func (b *byteClasses) Close() error {
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

// kallsymsAddrs looks up vmlinux symbols by name, each with the symbol
// types it may have (e.g. "Tt" for text); absent, hidden by kptr_restrict
// or of another type: no entry.
func kallsymsAddrs(want map[string]string) map[string]uint64 {
	out := map[string]uint64{}
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 { // module symbols have a fourth field
			continue
		}
		types, ok := want[fields[2]]
		if !ok || !strings.Contains(types, fields[1]) {
			continue
		}
		if addr, err := strconv.ParseUint(fields[0], 16, 64); err == nil && addr != 0 {
			out[fields[2]] = addr
		}
	}
	return out
}
