package report

// Stack is one sampled kernel stack in one accounting context (thread
// generation, path, context) with its share of that context's exact CPU
// time: NS = the context's exact ns x Samples / the context's samples. A
// context with exact time but no sample has one stack "[unsampled]"
// holding all of it, so that the stacks of an entry add up to its on-CPU
// time.
type Stack struct {
	Process  string   // comm of the process ("[system]": no target was current)
	PID      int      //
	Side     string   // run: "sender" or "receiver"
	Cell     string   // run: the cell's name
	Path     string   // report path (tx.write, softirq.net_rx, user, ...)
	Category string   // attribution category of the stack ("user" for user mode)
	Frames   []string // root first
	Samples  uint64
	NS       float64
}

// Frame names of stacks without kernel frames.
const (
	FrameUnsampled = "[unsampled]"
	// FrameProbe is zcprof's own handlers' time in a thread (the probe
	// context): timed exactly, never sampled as the workload's.
	FrameProbe = "[zcprof handlers]"
)
