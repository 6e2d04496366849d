package attrib

import "testing"

// The default rate keeps a sample's timer interrupts within the budget:
// DefaultHz where a sample is cheap (a few µs), lower on a
// guest where it costs tens of µs, never below the lowest rate.
func TestAutoHzKeepsTheBudget(t *testing.T) {
	for _, c := range []struct {
		sampleNS uint64
		want     int
	}{
		{0, DefaultHz},     // not measured
		{2_000, DefaultHz}, // 2999 × 2 µs = 0.6%
		{5_001, DefaultHz}, // 2999 × 5.001 µs = 1.4998%
		{5_002, 1999},      // 1.5001% at 2999
		{15_015, 999},      // 999 × 15.015 µs = 1.49999%
		{20_000, 499},      // our PVM guests: 999 × 20 µs = 2.0%
		{30_000, 499},      // 499 × 30 µs = 1.497%
		{1_000_000, 199},   // the lowest, whatever it costs
	} {
		if got := AutoHz(c.sampleNS); got != c.want {
			t.Errorf("AutoHz(%d ns) = %d, want %d", c.sampleNS, got, c.want)
		}
		if got := AutoHz(c.sampleNS); got != autoRates[len(autoRates)-1] && float64(got)*float64(c.sampleNS) > SampleBudget*1e9 {
			t.Errorf("AutoHz(%d ns) = %d spends more than %g%%", c.sampleNS, got, 100*SampleBudget)
		}
	}
}

// At most UnwindHz unwinds a second at any rate, every sample at or below
// it.
func TestUnwindEveryKeepsTheBound(t *testing.T) {
	for _, c := range []struct{ hz, want int }{
		{199, 1}, {333, 1}, {334, 2}, {499, 2}, {999, 3}, {1999, 7}, {2999, 10},
	} {
		got := UnwindEvery(c.hz)
		if got != c.want {
			t.Errorf("UnwindEvery(%d) = %d, want %d", c.hz, got, c.want)
		}
		if float64(c.hz)/float64(got) > UnwindHz {
			t.Errorf("UnwindEvery(%d) = %d unwinds %.0f a second, more than %d", c.hz, got, float64(c.hz)/float64(got), UnwindHz)
		}
	}
}
