package doctor

// Backend names `auto` can pick.
const (
	BackendTpBTF    = "tp_btf"
	BackendRawTp    = "raw_tp"
	BackendFentry   = "fentry"
	BackendKprobe   = "kprobe"
	BackendSampling = "sampling"
	BackendNone     = "none"
)

// decision is the capability ladder of DESIGN.md applied to the attach
// kinds that work: never a silent downgrade, so every skipped rung gets an
// "instead" text and an Unavailable entry.
type decision struct {
	accounting, attribution string
	instead                 map[string]string // attach kind -> what zcprof does without it
}

// decide picks the backends from which attach kinds passed (status ok).
func decide(ok map[string]bool) decision {
	d := decision{accounting: BackendNone, attribution: BackendNone, instead: map[string]string{}}

	switch {
	case ok[AttachTpBTF]:
		d.accounting = BackendTpBTF
	case ok[AttachRawTp]:
		d.accounting = BackendRawTp
	}
	switch {
	case ok[AttachFentry]:
		d.attribution = BackendFentry
	case ok[AttachKprobe]:
		d.attribution = BackendKprobe
	case ok[AttachPerfEvent]:
		d.attribution = BackendSampling
	}

	noAccounting := "no exact accounting: zcprof cannot profile on this kernel"
	if ok[AttachRawTp] {
		d.instead[AttachTpBTF] = "accounting uses raw_tp (same tracepoints, arguments read with bpf_probe_read)"
	} else {
		d.instead[AttachTpBTF] = noAccounting
	}
	if ok[AttachTpBTF] {
		d.instead[AttachRawTp] = "not needed: accounting uses tp_btf"
	} else {
		d.instead[AttachRawTp] = noAccounting
	}

	// What attribution falls back to once fentry and kprobe are gone.
	lastRung := "attribution falls back to perf_event sampling of kernel stacks (estimates with a 95% interval)"
	if !ok[AttachPerfEvent] {
		lastRung = "no attribution inside the kernel: exact context totals only"
	}
	switch {
	case ok[AttachKprobe]:
		d.instead[AttachFentry] = "attribution uses kprobe/kretprobe (exact, costlier per hit)"
	default:
		d.instead[AttachFentry] = lastRung
	}
	if ok[AttachFentry] {
		d.instead[AttachKprobe] = "not needed: attribution uses fentry"
	} else {
		d.instead[AttachKprobe] = lastRung
	}
	if ok[AttachKprobe] {
		d.instead[AttachKprobeMulti] = "kprobes are attached one function at a time (slower start-up)"
	} else {
		d.instead[AttachKprobeMulti] = "not used: no kprobes on this kernel"
	}
	if ok[AttachFentry] || ok[AttachKprobe] {
		d.instead[AttachPerfEvent] = "no copy-routine shares: only exact totals of the traced functions"
	} else {
		d.instead[AttachPerfEvent] = "no attribution inside the kernel: exact context totals only"
	}
	return d
}

// apply writes the decision into r: backends, Instead texts of the attach
// checks that did not pass, and Unavailable (kind -> the kernel's reason).
func (d decision) apply(r *Report) {
	r.Accounting, r.Attribution = d.accounting, d.attribution
	if r.Unavailable == nil {
		r.Unavailable = map[string]string{}
	}
	for i := range r.Checks {
		c := &r.Checks[i]
		if c.Status == StatusOK {
			continue
		}
		switch c.Kind {
		case KindAttach:
			c.Instead = d.instead[c.Name]
			r.Unavailable[c.Name] = c.Detail
		case KindTracepoint:
			r.Unavailable["tracepoint/"+c.Name] = c.Detail
		}
	}
}
