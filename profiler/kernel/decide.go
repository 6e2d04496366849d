package kernel

// Decision is the capability ladder (docs/architecture.md) applied to the
// attach kinds that work: never a silent downgrade, so every skipped rung
// gets an "instead" text (and, in doctor's report, an Unavailable entry).
type Decision struct {
	Accounting, Attribution string            // the backends auto takes, or None
	Instead                 map[string]string // attach kind -> what zcprof does without it
}

// attachKind is the attach kind a backend needs.
func attachKind(backend string) string {
	if backend == Sampling {
		return PerfEvent
	}
	return backend
}

// Decide picks the backends from which attach kinds passed (status ok):
// the first rung of each ladder whose attach kind works.
func Decide(ok map[string]bool) Decision {
	d := Decision{Accounting: None, Attribution: None, Instead: map[string]string{}}
	for _, b := range AccountingLadder {
		if ok[attachKind(b)] {
			d.Accounting = b
			break
		}
	}
	for _, b := range AttributionLadder {
		if ok[attachKind(b)] {
			d.Attribution = b
			break
		}
	}

	noAccounting := "no exact accounting: zcprof cannot profile on this kernel"
	if ok[RawTp] {
		d.Instead[TpBTF] = "accounting uses raw_tp (same tracepoints, arguments read with bpf_probe_read)"
	} else {
		d.Instead[TpBTF] = noAccounting
	}
	if ok[TpBTF] {
		d.Instead[RawTp] = "not needed: accounting uses tp_btf"
	} else {
		d.Instead[RawTp] = noAccounting
	}

	// What attribution falls back to once fentry and kprobe are gone.
	lastRung := "attribution falls back to perf_event sampling of kernel stacks (estimates with a 95% interval)"
	if !ok[PerfEvent] {
		lastRung = "no attribution inside the kernel: exact context totals only"
	}
	switch {
	case ok[Kprobe]:
		d.Instead[Fentry] = "attribution uses kprobe/kretprobe (exact, costlier per hit)"
	default:
		d.Instead[Fentry] = lastRung
	}
	if ok[Fentry] {
		d.Instead[Kprobe] = "not needed: attribution uses fentry"
	} else {
		d.Instead[Kprobe] = lastRung
	}
	if ok[Kprobe] {
		d.Instead[KprobeMulti] = "kprobes are attached one function at a time (slower start-up)"
	} else {
		d.Instead[KprobeMulti] = "not used: no kprobes on this kernel"
	}
	if ok[Fentry] || ok[Kprobe] {
		d.Instead[PerfEvent] = "no copy-routine shares: only exact totals of the traced functions"
	} else {
		d.Instead[PerfEvent] = "no attribution inside the kernel: exact context totals only"
	}
	return d
}
