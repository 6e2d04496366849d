package doctor

import "github.com/zcprof/zcprof/profiler/kernel"

// apply writes the decision into r: backends, Instead texts of the attach
// checks that did not pass, and Unavailable (kind -> the kernel's reason).
func apply(d kernel.Decision, r *Report) {
	r.Accounting, r.Attribution = d.Accounting, d.Attribution
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
			c.Instead = d.Instead[c.Name]
			r.Unavailable[c.Name] = c.Detail
		case KindTracepoint:
			r.Unavailable["tracepoint/"+c.Name] = c.Detail
		case KindPseudoFS:
			r.Unavailable[c.Name] = c.Detail
		}
	}
}
