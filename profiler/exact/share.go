package exact

import "strings"

// CopyShares finds, in the sampled kernel stacks of one accounting key
// (folded: frames root first, ";"-separated, with their sample counts),
// the copy share of each exact caller whose copy routine is not attached:
// among the samples inside the caller and not inside a traced callee
// (whose time is measured apart), those that classify as the copy.
// classify is the sampling backend's stack rule (stack -> category);
// attached reports which functions are traced (nil: none).
func CopyShares(stacks map[string]uint64, attached func(uint8) bool, classify func(string) string) map[uint8]Share {
	out := map[uint8]Share{}
	for _, rule := range copyInside {
		if attached != nil && attached(rule.routine) {
			continue
		}
		caller, _ := ByID(rule.caller)
		var callees []string
		for _, f := range Functions {
			if f.ID != rule.caller && f.ID != rule.routine && attached != nil && attached(f.ID) {
				callees = append(callees, f.Name)
			}
		}
		var sh Share
		for stack, n := range stacks {
			if !inSelf(stack, caller.Name, callees) {
				continue
			}
			sh.Total += n
			if classify(stack) == rule.category {
				sh.Copy += n
			}
		}
		out[rule.caller] = sh
	}
	return out
}

// inSelf reports whether a folded stack is inside fn and not inside one of
// the callees below it.
func inSelf(stack, fn string, callees []string) bool {
	frames := strings.Split(stack, ";")
	at := -1
	for i, f := range frames {
		if frameIs(f, fn) {
			at = i
			break
		}
	}
	if at < 0 {
		return false
	}
	for _, f := range frames[at+1:] {
		for _, c := range callees {
			if frameIs(f, c) {
				return false
			}
		}
	}
	return true
}

// frameIs matches a symbolized frame to a function name, compiler clones
// (".cold", ".isra.0") and module suffixes included.
func frameIs(frame, fn string) bool {
	if i := strings.IndexByte(frame, ' '); i >= 0 {
		frame = frame[:i]
	}
	return frame == fn || strings.HasPrefix(frame, fn+".")
}
