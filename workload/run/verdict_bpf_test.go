package run

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/testenv"
	"github.com/zcprof/zcprof/workload"
)

// The verdicts of real cells come from the bytes the kernel classified,
// with each receive path recognised: the exact bytes and the words.
func TestCellVerdictsMeasured(t *testing.T) {
	requireBPF(t)
	size := func(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
	for _, c := range []struct {
		method, rx string
		sender     func(n uint64) string
		receiver   func(n uint64) string
		column     [2]string
	}{
		{workload.MethodSendfile, workload.RxTrunc,
			func(n uint64) string { return "sendfile: zero-copy taken for " + size(n) + " (100%)" },
			func(n uint64) string {
				return "receive: " + size(n) + " discarded without copy (MSG_TRUNC)"
			},
			[2]string{"zero-copy 100%", "discarded 100%"}},
		{workload.MethodSplice, workload.RxSplice,
			func(n uint64) string { return "splice: zero-copy taken for " + size(n) + " (100%)" },
			func(n uint64) string { return "receive by splice: " + size(n) + " (page references)" },
			[2]string{"zero-copy 100%", "spliced 100%"}},
		{workload.MethodWrite, workload.RxRead,
			func(n uint64) string { return "copy: every byte copied on send (" + size(n) + " written)" },
			func(n uint64) string { return "receive copied: " + size(n) + " read by copy" },
			[2]string{"copy 100%", "copy 100%"}},
		{workload.MethodIOUring, workload.RxRead,
			func(n uint64) string { return "copy: every byte copied on send (" + size(n) + " written)" },
			func(n uint64) string { return "receive copied: " + size(n) + " read by copy" },
			[2]string{"copy 100%", "copy 100%"}},
	} {
		t.Run(c.method+"→"+c.rx, func(t *testing.T) {
			if c.method == workload.MethodIOUring && testenv.Expected("TRACEPOINTS_MISSING", "sock_send_length") {
				// Ring sends are counted at sock_send_length (6.3+): before it
				// their bytes are not seen (docs/known-issues.md).
				t.Skip("io_uring send bytes need the sock_send_length tracepoint, which this kernel does not have")
			}
			o := cellOptions(c.method, workload.TopoLoopback, 1)
			o.RxMethods = []string{c.rx}
			d, cell := runOne(t, o)
			w := cell.Workload
			if w.SentBytes != uint64(testBytes) || w.ReceivedBytes != w.SentBytes {
				t.Fatalf("workload sent %d received %d, want %d", w.SentBytes, w.ReceivedBytes, testBytes)
			}
			snd, rcv := cell.Sender.Zerocopy, cell.Receiver.Zerocopy
			if snd.Source != report.ZerocopySourceKernel {
				if c.method == workload.MethodIOUring {
					t.Skipf("io_uring send bytes not classified on this kernel (%s): %v", d.Backends.ByteClasses, d.Backends.Unavailable)
				}
				t.Fatalf("sender zero-copy from %q: %v", snd.Source, d.Backends.Unavailable)
			}
			if snd.TxBytes != w.SentBytes || rcv.RxBytes() != w.ReceivedBytes {
				t.Errorf("sender classified %d of %d bytes sent, receiver %d of %d received (%+v)", snd.TxBytes, w.SentBytes, rcv.RxBytes(), w.ReceivedBytes, rcv)
			}
			// The receive path's bytes are the socket's (a splice
			// receiver's drain into /dev/null adds none).
			rxPath := map[string]string{workload.RxTrunc: "rx.read", workload.RxSplice: "rx.splice", workload.RxRead: "rx.read"}[c.rx]
			if got := path(cell.Receiver, rxPath).Bytes; got != w.ReceivedBytes {
				t.Errorf("receiver %s: %d bytes, received %d", rxPath, got, w.ReceivedBytes)
			}
			want := []string{"sender: " + c.sender(w.SentBytes), "receiver: " + c.receiver(w.ReceivedBytes)}
			if !slices.Equal(cell.Verdicts[:min(2, len(cell.Verdicts))], want) {
				t.Errorf("verdicts\n got %q\nwant %q (first)", cell.Verdicts, want)
			}
			var table strings.Builder
			if err := report.WriteRunTable(&table, d); err != nil {
				t.Fatal(err)
			}
			for _, col := range c.column {
				if !strings.Contains(table.String(), "  "+col+"\n") {
					t.Errorf("ZERO-COPY column lacks %q:\n%s", col, table.String())
				}
			}
		})
	}
}
