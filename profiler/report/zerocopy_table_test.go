package report

import (
	"strings"
	"testing"
)

func TestTableShowsZerocopyVerdictAndBytes(t *testing.T) {
	d := &Document{Schema: Schema, Command: "profile", Processes: []Process{{
		PID: 7, Comm: "srv",
		Zerocopy: &Zerocopy{Source: ZerocopySourceKernel, TxBytes: 64 << 20, TxPinnedBytes: 64 << 20, TxDeferredCopyBytes: 64 << 20,
			ZCCompletions: 1024, ZCCompletionsCopied: 1024, RxMappedBytes: 1 << 20,
			Verdict: "zero-copy requested but copied on local delivery (loopback); receive mapped (TCP_ZEROCOPY_RECEIVE): zero-copy taken"},
	}, {
		// A receiver only: the verdict shows too; the request-only
		// fallback has no byte line.
		PID: 8, Comm: "rx", Zerocopy: &Zerocopy{Source: ZerocopySourceRequest, RxCopiedBytes: 1 << 20, Verdict: "no socket sends"},
	}}}
	out := render(t, WriteTable, d)
	assertContains(t, out,
		"  zero-copy: zero-copy requested but copied on local delivery (loopback); receive mapped",
		"    sent 64.0 MiB: copied 0, spliced 0, pinned 64.0 MiB, copied later 64.0 MiB; 1,024 of 1,024 completions COPIED; received 1.0 MiB: copied 0, mapped 1.0 MiB\n",
		"  zero-copy: no socket sends\n",
	)
	if strings.Count(out, "    sent ") != 1 {
		t.Errorf("byte line for the request-only entry:\n%s", out)
	}
}
