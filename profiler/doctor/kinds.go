package doctor

import (
	"fmt"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// Attach kinds, in the order doctor tries them. These are also the keys of
// Report.Unavailable.
const (
	AttachTpBTF       = "tp_btf"
	AttachRawTp       = "raw_tp"
	AttachFentry      = "fentry"
	AttachKprobe      = "kprobe"
	AttachKprobeMulti = "kprobe-multi"
	AttachPerfEvent   = "perf_event"
)

// attachFn attaches prog, returning the link to close.
type attachFn func(prog *ebpf.Program) (link.Link, error)

// tryKind loads program name, attaches it, runs trigger and reports whether
// the hit counter moved. Everything is closed before it returns.
func (p *probeSet) tryKind(e env, kind, name, target string, slot uint32, attach attachFn, trigger func()) Check {
	c := Check{Name: kind, Kind: KindAttach, Status: StatusUnavailable}
	coll, prog, err := p.load(name, "")
	if err != nil {
		c.Detail = e.describe(kind, "load", err)
		return c
	}
	defer coll.Close()
	before := p.count(slot)
	l, err := attach(prog)
	if err != nil {
		c.Detail = e.describe(kind, "attach", err)
		return c
	}
	trigger()
	l.Close()
	if n := p.count(slot) - before; n > 0 {
		c.Status = StatusOK
		c.Detail = fmt.Sprintf("attached to %s, fired %d times", target, n)
	} else {
		c.Status = StatusDegraded
		c.Detail = fmt.Sprintf("attached to %s but never fired", target)
	}
	return c
}

func sleepBriefly() { time.Sleep(20 * time.Millisecond) }

func (p *probeSet) checkTpBTF(e env) Check {
	return p.tryKind(e, AttachTpBTF, progTpBTF, "sched_switch", hitTpBTF, func(prog *ebpf.Program) (link.Link, error) {
		return link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceRawTp})
	}, sleepBriefly)
}

func (p *probeSet) checkRawTp(e env) Check {
	return p.tryKind(e, AttachRawTp, progRawTp, "sched_switch", hitRawTp, func(prog *ebpf.Program) (link.Link, error) {
		return link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sched_switch", Program: prog})
	}, sleepBriefly)
}

func (p *probeSet) checkFentry(e env) Check {
	return p.tryKind(e, AttachFentry, progFentry, "tcp_sendmsg", hitFentry, func(prog *ebpf.Program) (link.Link, error) {
		return link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceFEntry})
	}, sendTCP)
}

func (p *probeSet) checkKprobe(e env) Check {
	return p.tryKind(e, AttachKprobe, progKprobe, "tcp_sendmsg", hitKprobe, func(prog *ebpf.Program) (link.Link, error) {
		return link.Kprobe("tcp_sendmsg", prog, nil)
	}, sendTCP)
}

func (p *probeSet) checkKprobeMulti(e env, syms kallsyms) Check {
	targets := syms.WithPrefix("tcp_sendmsg")
	if len(targets) == 0 {
		targets = []string{"tcp_sendmsg"} // let the kernel say what is wrong
	}
	return p.tryKind(e, AttachKprobeMulti, progKmulti, fmt.Sprintf("tcp_sendmsg* (%d functions)", len(targets)), hitKprobeMulti, func(prog *ebpf.Program) (link.Link, error) {
		return link.KprobeMulti(prog, link.KprobeMultiOptions{Symbols: targets})
	}, sendTCP)
}
