package report

import "testing"

// The words of the verdicts, from the fields alone (the kernel-side
// classes are tested with the profiler's byte totals).
func TestJudgeWords(t *testing.T) {
	const m = 1 << 20
	cases := []struct {
		name   string
		zc     Zerocopy
		names  VerdictNames
		want   string
		column [2]string // sender, receiver
	}{
		{
			name: "nothing moved", zc: Zerocopy{Source: ZerocopySourceKernel},
			want: "no TCP transfers", column: [2]string{"-", "-"},
		},
		{
			name: "request only: sendfile and a header", zc: Zerocopy{Source: ZerocopySourceRequest, TxBytes: 64*m + 512, TxSplicedBytes: 64 * m, TxCopiedBytes: 512},
			names: VerdictNames{Splicer: "sendfile"},
			want:  "sendfile: zero-copy requested for 64.0 MiB (100%); 512 B written by copy", column: [2]string{"zc requested 100%", "-"},
		},
		{
			name: "request only: half and half", zc: Zerocopy{Source: ZerocopySourceRequest, TxBytes: 2 * m, TxPinnedBytes: m, TxCopiedBytes: m},
			names: VerdictNames{Pinner: "MSG_ZEROCOPY"},
			want:  "zero-copy requested for 50%: 1.0 MiB (50%) by MSG_ZEROCOPY (pinned pages); 1.0 MiB (50%) written by copy", column: [2]string{"zc requested 50%", "-"},
		},
		{
			name: "request only: nothing", zc: Zerocopy{Source: ZerocopySourceRequest},
			want: "no socket transfers",
		},
		{
			name: "estimated deferred copies say so",
			zc: Zerocopy{Source: ZerocopySourceRequest, TxBytes: 8 * m, TxPinnedBytes: 8 * m, TxDeferredCopyBytes: 8 * m,
				TxDeferredVia: map[string]uint64{"veth": 8 * m}, Estimated: []string{"tx_deferred_copy_bytes"}},
			names:  VerdictNames{Pinner: "io_uring SEND_ZC"},
			want:   "io_uring SEND_ZC: zero-copy requested but 8.0 MiB copied on local delivery (veth) (estimated: tx_deferred_copy_bytes)",
			column: [2]string{"copied later 100% (est.)", "-"},
		},
		{
			name:  "a byte class that could not attach",
			zc:    Zerocopy{Source: ZerocopySourceKernel, TxBytes: 8 * m, TxSplicedBytes: 8 * m, Unavailable: []string{"sendfile sources that cannot splice"}},
			names: VerdictNames{Splicer: "sendfile"},
			want:  "sendfile: no copy seen for 8.0 MiB (100%); cannot tell what sendfile sources that cannot splice would show (not attached)",
		},
		{
			name: "sends not traced at all", zc: Zerocopy{Source: ZerocopySourceKernel, Unavailable: []string{"sends"}},
			want: "no TCP bytes classified; cannot tell what sends would show (not attached)",
		},
		{
			name: "unclassified sends", zc: Zerocopy{Source: ZerocopySourceKernel, TxBytes: 4 * m, TxUnclassifiedBytes: 4 * m},
			want: "unclassified: no send decision seen for 4.0 MiB", column: [2]string{"unclassified 100%", "-"},
		},
		{
			name: "every receive path at once, bulk first",
			zc:   Zerocopy{Source: ZerocopySourceKernel, RxSplicedBytes: 40 * m, RxMappedBytes: 30 * m, RxDiscardedBytes: 20 * m, RxCopiedBytes: 10 * m},
			want: "receive by splice: 40.0 MiB (40%) (page references); 30.0 MiB (30%) mapped (TCP_ZEROCOPY_RECEIVE); " +
				"20.0 MiB (20%) discarded without copy (MSG_TRUNC); 10.0 MiB (10%) read by copy",
			column: [2]string{"-", "spliced 40%"},
		},
		{
			name: "mapped receive with a small copy", zc: Zerocopy{Source: ZerocopySourceKernel, RxMappedBytes: 500 * m, RxCopiedBytes: 1 * m},
			want: "receive mapped (TCP_ZEROCOPY_RECEIVE): 500.0 MiB; 1.0 MiB read by copy", column: [2]string{"-", "mapped 100%"},
		},
		{
			name:  "send and receive in one process",
			zc:    Zerocopy{Source: ZerocopySourceKernel, TxBytes: 3 << 30, TxSplicedBytes: 3 << 30, RxCopiedBytes: 74, RxSplicedBytes: 3 << 30},
			names: VerdictNames{Splicer: "splice"},
			want:  "splice: zero-copy taken for 3.0 GiB (100%); receive by splice: 3.0 GiB (page references); 74 B read by copy",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			zc := c.zc
			Judge(&zc, c.names)
			if zc.Verdict != c.want {
				t.Errorf("verdict\n got %q\nwant %q", zc.Verdict, c.want)
			}
			if c.column != [2]string{} {
				if got := [2]string{ZerocopyColumn(&zc, true), ZerocopyColumn(&zc, false)}; got != c.column {
					t.Errorf("columns %q, want %q", got, c.column)
				}
			}
		})
	}
}

func TestCompletionVerdict(t *testing.T) {
	for _, c := range []struct {
		completions, copied uint64
		want                string
	}{
		{0, 0, "io_uring_zc: no zero-copy completion was reported"},
		{1000, 1000, "io_uring_zc: 100% of 1,000 notifications COPIED: the kernel copied on local delivery (loopback)"},
		{1000, 0, "io_uring_zc: zero-copy kept: none of 1,000 notifications COPIED"},
		{1000, 250, "io_uring_zc: 25% of 1,000 notifications COPIED: the kernel copied part of the data after all"},
	} {
		if got := CompletionVerdict("io_uring_zc", "notifications", c.completions, c.copied, "local delivery (loopback)"); got != c.want {
			t.Errorf("%d/%d: got %q, want %q", c.copied, c.completions, got, c.want)
		}
	}
}
