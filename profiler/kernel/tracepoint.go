package kernel

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// AttachProgram attaches a tracepoint program of an accounting backend:
// a raw_tp program by the tracepoint's name, a tp_btf one where its
// section said (the loaders' programs come in both kinds, one per
// backend).
func AttachProgram(backend, tracepoint string, prog *ebpf.Program) (link.Link, error) {
	if backend == RawTp {
		return link.AttachRawTracepoint(link.RawTracepointOptions{Name: tracepoint, Program: prog})
	}
	return link.AttachTracing(link.TracingOptions{Program: prog})
}

// AttachTracepoint attaches and detaches a probe on tracepoint name with
// kind TpBTF or RawTp. It returns "" on success, else the reason.
func (p *Probes) AttachTracepoint(e Env, kind, name string) string {
	if kind == TpBTF {
		return p.attachOne(e, kind, progTpAny, name, func(prog *ebpf.Program) (link.Link, error) {
			return link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceRawTp})
		})
	}
	return p.attachOne(e, kind, progRawTp, "", func(prog *ebpf.Program) (link.Link, error) {
		return link.AttachRawTracepoint(link.RawTracepointOptions{Name: name, Program: prog})
	})
}

// AttachClassicTracepoint attaches and detaches a probe on the classic
// tracepoint group/name, whose id is read from tracefs (as the byte
// classes attach io_uring_complete). It returns "" on success, else the
// reason (tracefs unmounted among them).
func (p *Probes) AttachClassicTracepoint(e Env, group, name string) string {
	return p.attachOne(e, Tracepoint, progTpClassic, "", func(prog *ebpf.Program) (link.Link, error) {
		return link.Tracepoint(group, name, prog, nil)
	})
}
