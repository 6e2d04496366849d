package attrib

import (
	"fmt"

	"github.com/zcprof/zcprof/profiler/report"
)

// earlyWarnAbove is the share of early samples worth a warning: below it
// the correction changes no figure visibly.
const earlyWarnAbove = 0.02

// Sampled is a Reading that holds sampler readings (the function-exact
// backend's, for its copy shares).
type Sampled interface {
	SampledPart() *Samples
}

// SampledPart implements Sampled.
func (s *Samples) SampledPart() *Samples { return s }

// EarlyWarning says, for the samples between prev and cur, what share of
// the targets' samples came early and were left out ("" below
// earlyWarnAbove, or without samples).
func EarlyWarning(prev, cur Reading) string {
	c, ok := cur.(Sampled)
	if !ok || c.SampledPart() == nil {
		return ""
	}
	var p *Samples
	if ps, ok := prev.(Sampled); ok {
		p = ps.SampledPart()
	}
	s := c.SampledPart().Sub(p)
	var early, all uint64
	for _, n := range s.EarlyLeaves {
		early += n
	}
	for _, n := range s.Leaves {
		all += n
	}
	all += early
	if all == 0 || float64(early) < earlyWarnAbove*float64(all) {
		return ""
	}
	return fmt.Sprintf("sampling: %s of the targets' samples came early, delivered less than half the usual %.0f µs after their timer fell due "+
		"(a hypervisor that delivers a due guest timer at the guest's next exit to it): they are left out of the category shares, "+
		"which would otherwise bill the work that ran when the timer fell due to the code that exited",
		report.WholePercent(early, all), float64(s.UsualLatenessNS)/1e3)
}

// warnEarly adds EarlyWarning to d.
func warnEarly(d *report.Document, prev, cur Reading) {
	if w := EarlyWarning(prev, cur); w != "" {
		d.Warnings = append(d.Warnings, w)
	}
}
