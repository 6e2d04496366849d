package attrib

import (
	"path"
	"strings"
	"sync"
)

// Pile-up frames. cpu-clock is an hrtimer: without a PMU (NMI) a sample
// cannot fire while interrupts are disabled, so it is delivered where they
// are re-enabled; under PVM the leaf is the hypervisor's irq-enable hook
// (docs/known-issues.md, "Interrupt-enable pile-ups"). These frames are stripped from the
// inner end of a stack, billing the sample to the caller that disabled
// interrupts (the parent frame).
var pileUp = []string{
	"pvm_irq_enable", "__raw_callee_save_pvm_irq_enable", "pvm_restore_fl", "__raw_callee_save_pvm_restore_fl",
	"native_irq_enable", "arch_local_irq_enable", "arch_local_irq_restore", "pv_native_irq_enable",
	"_raw_spin_unlock_irqrestore", "_raw_spin_unlock_irq", "_raw_read_unlock_irqrestore",
	"_raw_write_unlock_irqrestore", "_raw_read_unlock_irq", "_raw_write_unlock_irq",
	"handle_softirqs", "__do_softirq", "do_softirq", "__local_bh_enable_ip", "local_bh_enable",
	"irq_exit_rcu", "__irq_exit_rcu", "finish_task_switch", "sysvec_apic_timer_interrupt",
	"__sysvec_apic_timer_interrupt",
}

// interruptEntries end pile-up billing: a sample that piled up in an
// interrupt's own entry or exit (its softirq not yet started) is interrupt
// overhead, not work of the code it interrupted.
var interruptEntries = []string{"asm_sysvec_*", "asm_common_interrupt", "asm_exc_nmi"}

// Context entries: where a softirq or interrupt starts on top of whatever
// it interrupted. Only the frames inside the innermost one say what the
// sampled context was doing.
var contextEntries = []string{
	"handle_softirqs", "__do_softirq", "run_ksoftirqd", "asm_sysvec_*", "asm_common_interrupt",
	"common_interrupt", "asm_exc_nmi",
}

// Classifier maps folded stacks to categories with the rule table.
type Classifier struct {
	rules   []Rule
	mu      sync.Mutex
	byFrame map[string]*Rule // normalized frame -> rule (nil: none)
	byStack map[string]string
	own     map[string]bool // stack -> sampled in zcprof's own programs (own.go)
	pile    map[string]bool
	entries []string
}

// NewClassifier compiles rules (Rules for the default table).
func NewClassifier(rules []Rule) *Classifier {
	c := &Classifier{rules: rules, byFrame: map[string]*Rule{}, byStack: map[string]string{}, own: map[string]bool{}, pile: map[string]bool{}, entries: contextEntries}
	for _, f := range pileUp {
		c.pile[f] = true
	}
	return c
}

var defaultClassifier = NewClassifier(Rules)

// Classify returns the category of a folded stack (root first) with the
// default rules.
func Classify(stack string) string { return defaultClassifier.Classify(stack) }

// Classify returns the category of a folded stack (root first).
func (c *Classifier) Classify(stack string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cat, ok := c.byStack[stack]; ok {
		return cat
	}
	cat := c.classify(stack)
	c.byStack[stack] = cat
	return cat
}

func (c *Classifier) classify(stack string) string {
	if stack == StackUser || stack == StackUnknown || stack == "" {
		return Other
	}
	frames := strings.Split(stack, ";")
	for i := range frames {
		frames[i] = normalize(frames[i])
	}
	// Bill pile-ups to the parent frame.
	n := len(frames)
	for n > 1 && c.pile[frames[n-1]] {
		n--
	}
	frames = frames[:n]
	for _, p := range interruptEntries {
		if n > 1 && match(p, frames[n-1]) {
			return Other
		}
	}
	// Keep the innermost context only.
	for i := n - 1; i > 0; i-- {
		if c.isEntry(frames[i]) {
			frames = frames[i:]
			break
		}
	}
	for _, f := range frames {
		if r := c.rule(f); r != nil && r.Absorb {
			return r.Category
		}
	}
	copying := false
	for i := len(frames) - 1; i >= 0; i-- {
		r := c.rule(frames[i])
		if r == nil {
			continue
		}
		if r.Copy {
			copying = true
			continue
		}
		if copying && r.CopyAs != "" {
			return r.CopyAs
		}
		return r.Category
	}
	return Other
}

func (c *Classifier) isEntry(frame string) bool {
	for _, p := range c.entries {
		if match(p, frame) {
			return true
		}
	}
	return false
}

// rule finds the most specific rule for a frame: an exact name, else the
// glob with the most literal characters.
func (c *Classifier) rule(frame string) *Rule {
	if r, ok := c.byFrame[frame]; ok {
		return r
	}
	var best *Rule
	bestScore := -1
	for i := range c.rules {
		r := &c.rules[i]
		for _, p := range r.Funcs {
			if !match(p, frame) {
				continue
			}
			score := len(strings.ReplaceAll(p, "*", ""))
			if !strings.Contains(p, "*") {
				score = 1 << 20
			}
			if score > bestScore {
				best, bestScore = r, score
			}
		}
	}
	c.byFrame[frame] = best
	return best
}

func match(pattern, name string) bool {
	if !strings.Contains(pattern, "*") {
		return pattern == name
	}
	ok, _ := path.Match(pattern, name)
	return ok
}

// normalize drops the module tag and compiler clone suffixes.
func normalize(frame string) string {
	if i := strings.IndexByte(frame, ' '); i >= 0 {
		frame = frame[:i]
	}
	if i := strings.IndexByte(frame, '.'); i > 0 {
		frame = frame[:i]
	}
	return frame
}
