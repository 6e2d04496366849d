package exact

import (
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/kernel"
)

func TestLossWarnings(t *testing.T) {
	prev := &Snapshot{Stats: map[FuncKey]Stat{}, Missed: map[uint8]uint64{FuncSkbCopyUbufs: 2}, Lost: Lost{NoFrame: 1}}
	cur := &Snapshot{Stats: map[FuncKey]Stat{}, Missed: map[uint8]uint64{FuncSkbCopyUbufs: 7, FuncTCPSendmsgLocked: 1},
		Lost: Lost{NoFrame: 4, Unwound: 2}}
	d := Delta(prev, cur)
	if d.Missed[FuncSkbCopyUbufs] != 5 || d.Missed[FuncTCPSendmsgLocked] != 1 || len(d.Missed) != 2 {
		t.Fatalf("missed delta %v", d.Missed)
	}
	w := lossWarnings(kernel.Kprobe, d)
	if len(w) != 2 {
		t.Fatalf("warnings %q", w)
	}
	if !strings.Contains(w[0], "function-exact (kprobe): the kernel skipped probe or program runs: 1 for tcp_sendmsg_locked, 5 for skb_copy_ubufs (") {
		t.Errorf("missed warning %q", w[0])
	}
	if w[1] != "function-exact (kprobe): calls not measured: 3 exits without their entry, 2 entries whose exit never came" {
		t.Errorf("lost warning %q", w[1])
	}
	if w := lossWarnings(kernel.Fentry, Delta(cur, cur)); len(w) != 0 {
		t.Errorf("no loss, yet %q", w)
	}
}
