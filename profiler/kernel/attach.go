package kernel

import "fmt"

// AttachProbe is one attach kind's probe, as data: a trivial program of
// bpf/probes.bpf.c, where it attaches, and what makes it fire. The probes
// are one to a file (tpbtf.go, rawtp.go, fentry.go, kprobe.go,
// kprobemulti.go); perf_event, which needs one event per CPU, is
// perfevent.go.
type AttachProbe struct {
	Kind    string // TpBTF, RawTp, Fentry, Kprobe, KprobeMulti
	Program string // in bpf/probes.bpf.c
	hit     uint32 // its doctor_hits slot
	Target  string // what it attaches to, in words
	Attach  attachFn
	Trigger func() // runs what the program is attached to
}

// Try loads the probe's program, attaches it, runs its trigger and says
// whether the hit counter moved: ok, degraded (attached but never fired)
// or unavailable (with the kernel's reason). Everything is closed before
// it returns.
func (p *Probes) Try(e Env, a AttachProbe) Result {
	r := Result{Status: StatusUnavailable}
	coll, prog, err := p.load(a.Program, "")
	if err != nil {
		r.Detail = e.Describe(a.Kind, "load", err)
		return r
	}
	defer coll.Close()
	before := p.count(a.hit)
	l, err := a.Attach(prog)
	if err != nil {
		r.Detail = e.Describe(a.Kind, "attach", err)
		return r
	}
	a.Trigger()
	l.Close()
	if n := p.count(a.hit) - before; n > 0 {
		r.Status = StatusOK
		r.Detail = fmt.Sprintf("attached to %s, fired %d times", a.Target, n)
	} else {
		r.Status = StatusDegraded
		r.Detail = fmt.Sprintf("attached to %s but never fired", a.Target)
	}
	return r
}

// attachOnly loads and attaches the probe's program without triggering
// it: "" when the kernel accepts it, else the reason.
func (p *Probes) attachOnly(e Env, a AttachProbe) string {
	return p.attachOne(e, a.Kind, a.Program, "", a.Attach)
}
