package run

import (
	"testing"

	"github.com/zcprof/zcprof/workload"
)

// TestSpliceCountsSocketBytesOnce: a splice send moves every byte twice
// (file or user pages -> pipe, pipe -> socket) and a splice receive too
// (socket -> pipe, pipe -> /dev/null). A path's bytes are the socket's:
// exactly what the workload moved, once, while both legs' CPU and only the
// socket leg's calls stay on the path.
func TestSpliceCountsSocketBytesOnce(t *testing.T) {
	requireBPF(t)
	const bytes = 64 << 20
	o := Defaults()
	o.Methods = []string{workload.MethodSplice, workload.MethodVmsplice}
	o.RxMethods = []string{workload.RxSplice}
	o.Streams, o.Topology = []int{1}, workload.TopoLoopback
	o.Duration, o.Bytes = 0, bytes
	d, err := Run(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Cells) != 2 {
		t.Fatalf("%d cells, want 2", len(d.Cells))
	}
	for _, cell := range d.Cells {
		w := cell.Workload
		if w.SentBytes != bytes || w.ReceivedBytes != bytes {
			t.Fatalf("%s: workload sent %d received %d, want %d", cell.Method, w.SentBytes, w.ReceivedBytes, bytes)
		}
		tx, rx := path(cell.Sender, "tx.splice"), path(cell.Receiver, "rx.splice")
		if tx.Bytes != bytes || rx.Bytes != bytes {
			t.Errorf("%s: tx.splice %d bytes, rx.splice %d bytes, want %d each", cell.Method, tx.Bytes, rx.Bytes, bytes)
		}
		// Both legs are data-path calls of the workload; only the socket
		// leg is a call of the path.
		if tx.Calls == 0 || tx.Calls >= w.SendCalls || rx.Calls == 0 || rx.Calls >= w.RecvCalls {
			t.Errorf("%s: tx.splice %d calls of the workload's %d, rx.splice %d of %d: want the socket leg's only",
				cell.Method, tx.Calls, w.SendCalls, rx.Calls, w.RecvCalls)
		}
		if other := path(cell.Sender, "other"); other.Bytes != 0 {
			t.Errorf("%s: sender other has %d bytes", cell.Method, other.Bytes)
		}
	}
}
