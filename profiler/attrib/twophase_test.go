package attrib

import (
	"math"
	"testing"
)

// Stacks of a sender's tx.write as the sampler folds them (root first).
const (
	copyStack   = "entry_SYSCALL_64_after_hwframe;do_syscall_64;ksys_write;tcp_sendmsg_locked;_copy_from_iter;rep_movs_alternative"
	xmitStack   = "entry_SYSCALL_64_after_hwframe;do_syscall_64;ksys_write;tcp_sendmsg_locked;__tcp_push_pending_frames;tcp_write_xmit;_raw_spin_unlock_irqrestore;pvm_irq_enable"
	pileupOther = "entry_SYSCALL_64_after_hwframe;do_syscall_64;ksys_write;_raw_spin_unlock_irqrestore;pvm_irq_enable"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func TestTwoPhasePreconditions(t *testing.T) {
	if c := Classify(copyStack); c != CopyTx {
		t.Fatalf("copy stack is %s", c)
	}
	if c := Classify(xmitStack); c != TCPTx {
		t.Fatalf("xmit stack is %s", c)
	}
	if c := Classify(pileupOther); c == TCPTx {
		t.Fatalf("pile-up outside TCP is %s", c)
	}
}

// Every sample unwound: the simple estimator, exactly.
func TestTwoPhaseEveryUnwound(t *testing.T) {
	stacks := map[string]uint64{copyStack: 300, xmitStack: 200, pileupOther: 100}
	leaves := map[string]uint64{"rep_movs_alternative": 300, "pvm_irq_enable": 300}
	got, n := twoPhase(leaves, stacks, Classify, nil)
	if n != 600 {
		t.Fatalf("n = %v", n)
	}
	for c, k := range map[string]float64{CopyTx: 300, TCPTx: 200, Classify(pileupOther): 100} {
		p := k / 600
		if !near(got[c].p, p) || !near(got[c].variance, p*(1-p)/600) {
			t.Errorf("%s: %+v, want p %v variance %v", c, got[c], p, p*(1-p)/600)
		}
	}
}

// Where the leaf decides the category, a tenth of the samples unwound
// gives the interval of all of them; a mixed leaf costs precision.
func TestTwoPhaseSubsample(t *testing.T) {
	leaves := map[string]uint64{"rep_movs_alternative": 4000, "pvm_irq_enable": 6000}
	stacks := map[string]uint64{copyStack: 400, xmitStack: 300, pileupOther: 300}
	got, n := twoPhase(leaves, stacks, Classify, nil)
	if n != 10000 {
		t.Fatalf("n = %v", n)
	}
	if e := got[CopyTx]; !near(e.p, 0.4) || !near(e.variance, 0.4*0.6/10000) {
		t.Errorf("copy.tx %+v: want p 0.4 with the variance of 10,000 samples", e)
	}
	// tcp.tx: half of the pile-up leaf's 60%: p = 0.3, within-leaf
	// variance 0.6 x 0.25, over the 1,000 unwound samples.
	want := 0.3*0.7/10000 + 0.6*0.25*(1.0/1000-1.0/10000)
	if e := got[TCPTx]; !near(e.p, 0.3) || !near(e.variance, want) {
		t.Errorf("tcp.tx %+v: want p 0.3 variance %v", e, want)
	}
	cats := categoriesFrom(1_000_000, got, n)
	var sum uint64
	for _, c := range cats {
		sum += c.CPUNS
		switch c.Category {
		case CopyTx:
			if w := uint64(math.Round(1e6 * Wilson(4000, 10000).HalfWidth())); c.CI95NS != w {
				t.Errorf("copy.tx ±%d, want ±%d (Wilson at 10,000)", c.CI95NS, w)
			}
		case TCPTx:
			if w := uint64(math.Round(1e6 * Wilson(3000, 10000).HalfWidth())); c.CI95NS <= w*2 {
				t.Errorf("tcp.tx ±%d: a mixed leaf must widen it well beyond ±%d", c.CI95NS, w)
			}
		}
	}
	if sum != 1_000_000 {
		t.Errorf("categories add up to %d", sum)
	}
}

// A leaf no unwound sample reached is classified by itself: tcp_write_xmit
// is TCP's; a copy routine alone does not say whose copy it is (other).
func TestTwoPhaseLeafNeverUnwound(t *testing.T) {
	got, _ := twoPhase(map[string]uint64{"tcp_write_xmit": 10, "rep_movs_alternative": 5, "pvm_irq_enable": 85},
		map[string]uint64{xmitStack: 9}, Classify, nil)
	if !near(got[TCPTx].p, 0.95) || !near(got[Other].p, 0.05) {
		t.Errorf("%+v", got)
	}
}

// A small context that unwound none of its copy leaves borrows the leaf's
// mix from similar contexts (a memcpy in NET_RX is skb_copy_ubufs's there)
// instead of calling a bare copy routine "other".
func TestTwoPhasePooledMix(t *testing.T) {
	pooled := func(leaf string) Counts {
		if leaf == "memcpy" {
			return Counts{CopyDeferred: 9, SkbMem: 1}
		}
		return nil
	}
	got, _ := twoPhase(map[string]uint64{"memcpy": 40, "tcp_write_xmit": 10}, nil, Classify, pooled)
	if !near(got[CopyDeferred].p, 0.72) || !near(got[SkbMem].p, 0.08) || !near(got[TCPTx].p, 0.2) || got[Other].p != 0 {
		t.Errorf("%+v", got)
	}
	// No unwound sample at all: the within-leaf term counts as one.
	if want := 0.72*0.28/50 + 0.8*0.09*(1-1.0/50); !near(got[CopyDeferred].variance, want) {
		t.Errorf("copy.deferred variance %v, want %v", got[CopyDeferred].variance, want)
	}
}
