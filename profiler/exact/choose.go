package exact

import (
	"fmt"
	"strings"

	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/doctor"
)

// BackendAuto lets the kernel decide (--backend auto).
const BackendAuto = "auto"

// Backends lists the accepted --backend values.
var Backends = []string{BackendAuto, attrib.NameSampling, attrib.NameFentry, attrib.NameKprobe}

// Choice is the attribution backend of a run and why.
type Choice struct {
	Requested string // what --backend asked for
	Backend   string // fentry, kprobe or sampling
	// Unavailable maps each rung that was skipped to the kernel's reason
	// (backends.unavailable).
	Unavailable map[string]string
}

// ladder is the order `auto` walks (DESIGN.md, capability ladder).
var ladder = []string{attrib.NameFentry, attrib.NameKprobe, attrib.NameSampling}

// Prober is doctor.SelectAttribution: the cheap check `auto` uses.
type Prober func() (doctor.Selection, error)

// Choose validates --backend and, for auto, asks the prober which rung the
// kernel offers. A forced backend is not probed: attaching it tells.
func Choose(requested string, probe Prober) (Choice, error) {
	if requested == "" {
		requested = BackendAuto
	}
	c := Choice{Requested: requested, Unavailable: map[string]string{}}
	switch requested {
	case attrib.NameSampling, attrib.NameFentry, attrib.NameKprobe:
		c.Backend = requested
		return c, nil
	case BackendAuto:
	default:
		return c, fmt.Errorf("--backend %q: unknown (use %s)", requested, strings.Join(Backends, ", "))
	}
	sel, err := probe()
	if err != nil {
		// The probe itself could not run: sampling says why if it fails too.
		c.Backend = attrib.NameSampling
		c.Unavailable[attrib.NameFentry] = "not probed: " + err.Error()
		c.Unavailable[attrib.NameKprobe] = "not probed: " + err.Error()
		return c, nil
	}
	c.Backend = sel.Backend
	for _, rung := range ladder {
		if rung == c.Backend {
			break
		}
		if why, ok := sel.Unavailable[rung]; ok {
			c.Unavailable[rung] = why
		}
	}
	return c, nil
}

// Exact reports whether the choice is a function-exact backend.
func (c Choice) Exact() bool {
	return c.Backend == attrib.NameFentry || c.Backend == attrib.NameKprobe
}

// Fail records that the chosen backend could not be attached. With auto,
// it moves to the next rung; a forced backend is an error (one line).
func (c Choice) Fail(err error) (Choice, error) {
	if c.Requested != BackendAuto {
		return c, fmt.Errorf("--backend %s: %v", c.Requested, err)
	}
	next := c
	next.Unavailable = map[string]string{}
	for k, v := range c.Unavailable {
		next.Unavailable[k] = v
	}
	next.Unavailable[c.Backend] = err.Error()
	for i, rung := range ladder {
		if rung == c.Backend && i+1 < len(ladder) {
			next.Backend = ladder[i+1]
			return next, nil
		}
	}
	return next, fmt.Errorf("no attribution backend: %v", err)
}

// Why is the one line a run prints about its attribution backend: which
// one, and why the better rungs were not used.
func (c Choice) Why() string {
	var skipped []string
	for _, rung := range ladder {
		if why, ok := c.Unavailable[rung]; ok {
			skipped = append(skipped, strings.TrimPrefix(why, rung+": ")+" ["+rung+"]")
		}
	}
	switch {
	case c.Requested != BackendAuto && len(skipped) == 0:
		return fmt.Sprintf("attribution: %s (requested with --backend)", c.Backend)
	case len(skipped) == 0:
		return fmt.Sprintf("attribution: %s (auto: the best rung this kernel offers)", c.Backend)
	}
	return fmt.Sprintf("attribution: %s (%s: %s)", c.Backend, c.Requested, strings.Join(skipped, "; "))
}
