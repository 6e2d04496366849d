package profiler

import "testing"

// TestExitsAttachBeforeEntries: a softirq (or hardirq, or syscall) entered
// between the attachment of its entry and its exit program never exits for
// the accounting, and its CPU's time is billed to it until the next
// switch. The window itself is one attach syscall wide (microseconds) and
// cannot be hit on purpose, so the order is what is checked.
func TestExitsAttachBeforeEntries(t *testing.T) {
	pairs := map[string]string{
		"sys_enter":         "sys_exit",
		"softirq_entry":     "softirq_exit",
		"irq_handler_entry": "irq_handler_exit",
	}
	at := map[string]int{}
	for i, p := range corePoints {
		at[p.tracepoint] = i
	}
	for entry, exit := range pairs {
		e, ok1 := at[entry]
		x, ok2 := at[exit]
		if !ok1 || !ok2 {
			t.Fatalf("corePoints lack %s or %s", entry, exit)
		}
		if x > e {
			t.Errorf("%s is attached before %s", entry, exit)
		}
	}
}
