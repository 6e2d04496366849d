package report

import "strings"

// UnattachedWarnings are the table's warnings for what this run wanted but
// could not attach, so that a missing source is seen where the figures
// are, not only in the JSON's backends.unavailable. Fallbacks that lose
// nothing (tp_btf -> raw_tp, a send-decision backend of an older kernel)
// and attribution (its own line) are not repeated.
func UnattachedWarnings(b Backends) []string {
	var out []string
	if why := b.Unavailable["tracefs"]; why != "" {
		out = append(out, why)
	}
	if why, ok := b.Unavailable["byte classes"]; ok && b.ByteClasses == "" && !strings.HasPrefix(why, "turned off") {
		out = append(out, "byte classes not loaded ("+why+"): zero-copy verdicts show the syscall request only")
	}
	for _, src := range b.ByteClassesUnavailable {
		out = append(out, "not attached: byte classes for "+src+" ("+b.Unavailable["byte classes: "+src]+"): those bytes are not counted, and a verdict that depends on them cannot tell")
	}
	if why := b.Unavailable["overhead"]; why != "" {
		out = append(out, "overhead not measured: "+why)
	}
	return out
}
