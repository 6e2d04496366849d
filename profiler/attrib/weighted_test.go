package attrib

import (
	"math"
	"testing"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// Each context's exact time is split over its stacks by sample share; a
// context without samples keeps all of its time as "[unsampled]"; pile-up
// leaves are billed to the parent frame.
func TestWeightedStacksAddUpToExactTime(t *testing.T) {
	tx := profiler.PathCtx{Path: taxonomy.PathTxWrite, Ctx: taxonomy.CtxTask}
	user := profiler.PathCtx{Path: taxonomy.PathUser, Ctx: taxonomy.CtxTask}
	iv := profiler.Interval{Threads: []profiler.ThreadDelta{{
		Info:     profiler.ThreadInfo{Gen: 7, TID: 10, TGID: 10, Comm: "w"},
		Counters: map[profiler.PathCtx]profiler.Counter{tx: {NS: 1000}, user: {NS: 300}},
	}}}
	stacks := map[profiler.Key]map[string]uint64{
		{Gen: 7, Path: taxonomy.PathTxWrite, Ctx: taxonomy.CtxTask}: {
			"do_syscall_64;tcp_sendmsg_locked;_copy_from_iter":                           3,
			"do_syscall_64;tcp_sendmsg_locked;tcp_push;__raw_callee_save_pvm_irq_enable": 1,
		},
	}
	out := WeightedStacks(iv, stacks, ByProcess, false)
	var total float64
	got := map[string]float64{}
	for _, s := range out {
		total += s.NS
		got[s.Frames[len(s.Frames)-1]+"/"+s.Category+"/"+s.Path] = s.NS
		if s.Process != "w" || s.PID != 10 {
			t.Errorf("owner %q %d", s.Process, s.PID)
		}
	}
	if total != 1300 {
		t.Errorf("stacks add up to %v ns, want 1300", total)
	}
	for k, want := range map[string]float64{
		"_copy_from_iter/copy.tx/tx.write": 750, "tcp_push/tcp.tx/tx.write": 250, "[unsampled]/user/user": 300,
	} {
		if math.Abs(got[k]-want) > 1e-9 {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], want, got)
		}
	}
}
