package profiler

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/testenv"
	"github.com/zcprof/zcprof/workload"
)

// The same verdicts for an outside process: this test binary re-executed
// runs one workload transfer and writes what it did to a file. The profiler
// only knows its pid; nothing tells it which method the process used.

const transferChildEnv = "ZCPROF_TEST_TRANSFER"

type transferChildSpec struct {
	Config workload.Config
	Out    string
}

type transferChildResult struct {
	Sent, Received         uint64
	Completions, Copied    uint64
	RxMapped, RxCopied     uint64
	SenderTID, ReceiverTID int
}

// init, not TestMain: the child mode belongs to this file. The spawn
// helper (the binary re-executed before exec) carries the same
// environment and must not start a transfer.
func init() { childMode(transferChildEnv, "transfer", runTransferChild) }

func runTransferChild(specJSON string) error {
	var spec transferChildSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return err
	}
	tr, err := workload.Prepare(spec.Config)
	if err != nil {
		return err
	}
	defer tr.Close()
	res, err := tr.Run(context.Background())
	if err != nil {
		return err
	}
	tot := res.Total()
	out := transferChildResult{
		Sent: uint64(tot.SentBytes), Received: uint64(tot.ReceivedBytes),
		Completions: uint64(tot.ZCCompletions), Copied: uint64(tot.ZCCopied),
		RxMapped: uint64(tot.RxMappedBytes), RxCopied: uint64(tot.RxCopiedBytes),
	}
	for _, th := range tr.Threads() {
		if th.Role == workload.RoleSender {
			out.SenderTID = th.TID
		} else {
			out.ReceiverTID = th.TID
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return os.WriteFile(spec.Out, b, 0o600)
}

// profileTransfer runs `zcprof profile -- <child>` on one transfer.
func profileTransfer(t *testing.T, cfg workload.Config, mode string) (report.Process, transferChildResult, *report.Document) {
	t.Helper()
	skipWithoutTracepoint(t, mode)
	out := setTransferChild(t, cfg)
	var r transferChildResult
	p, d := profileByteClassChild(t, mode, out, &r)
	return p, r, d
}

// setTransferChild makes the profiled child of this test run a transfer
// of cfg; it writes its result to the returned file.
func setTransferChild(t *testing.T, cfg workload.Config) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "result.json")
	spec, err := json.Marshal(transferChildSpec{Config: cfg, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(transferChildEnv, string(spec))
	return out
}

func TestProfileZerocopyVerdicts(t *testing.T) {
	// As on a fresh machine: no tracefs until zcprof mounts it.
	if !testenv.InFreshMounts(t) {
		return
	}
	total := int64(testenv.Pick(32<<20, 8<<20))
	type check func(t *testing.T, zc *report.Zerocopy, r transferChildResult)
	var net0 map[string]uint64 // the TCP counters before the current case's transfer
	cases := []struct {
		name  string
		cfg   workload.Config
		check check
	}{
		{"write", workload.Config{Method: workload.MethodWrite}, func(t *testing.T, zc *report.Zerocopy, r transferChildResult) {
			if zc.TxBytes != r.Sent || zc.TxCopiedBytes != r.Sent || !strings.HasPrefix(zc.Verdict, "copy") {
				t.Errorf("%+v, sent %d", zc, r.Sent)
			}
		}},
		{"sendfile", workload.Config{Method: workload.MethodSendfile}, zeroCopyTaken},
		{"splice", workload.Config{Method: workload.MethodSplice}, zeroCopyTaken},
		{"msg_zerocopy", workload.Config{Method: workload.MethodMsgZerocopy}, copiedOnLocalDelivery},
		{"io_uring_zc", workload.Config{Method: workload.MethodIOUringZC}, copiedOnLocalDelivery},
		{"msg_zerocopy without SO_ZEROCOPY", workload.Config{Method: workload.MethodMsgZerocopy, NoSockZerocopy: true},
			func(t *testing.T, zc *report.Zerocopy, r transferChildResult) {
				if zc.TxCopiedZCIgnoredBytes != r.Sent || zc.TxPinnedBytes != 0 || !strings.Contains(zc.Verdict, "MSG_ZEROCOPY ignored: SO_ZEROCOPY not set") {
					t.Errorf("%+v, sent %d", zc, r.Sent)
				}
			}},
		{"zerocopy receive", workload.Config{Method: workload.MethodMsgZerocopy, RxMethod: workload.RxZerocopy, Size: 256 << 10},
			func(t *testing.T, zc *report.Zerocopy, r transferChildResult) {
				if zc.RxMappedBytes != r.RxMapped || zc.RxMappedBytes+zc.RxCopiedBytes != r.Received {
					t.Errorf("rx mapped %d copied %d; child mapped %d copied %d of %d", zc.RxMappedBytes, zc.RxCopiedBytes, r.RxMapped, r.RxCopied, r.Received)
				}
				testenv.CheckMappedShare(t, zc.RxMappedBytes, r.Received, net0)
				if !strings.Contains(zc.Verdict, "mapped (TCP_ZEROCOPY_RECEIVE)") {
					t.Errorf("verdict %q", zc.Verdict)
				}
			}},
	}
	for _, mode := range byteClassModes() {
		t.Run(mode, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					cfg := c.cfg
					cfg.Bytes = total
					if cfg.Size == 0 {
						cfg.Size = 64 << 10
					}
					net0 = testenv.NetCounters(t)
					p, r, _ := profileTransfer(t, cfg, mode)
					t.Logf("TCP counters: %s", testenv.NetCountersMoved(t, net0))
					if !uringUnclassified(t, mode, cfg.Method, p.Zerocopy) {
						c.check(t, p.Zerocopy, r)
					}
					// One process sends and receives: every byte it sent was
					// received, and copied or mapped on the way in.
					if zc := p.Zerocopy; zc.RxCopiedBytes+zc.RxMappedBytes != r.Received || r.Received != r.Sent {
						t.Errorf("rx copied %d + mapped %d, child received %d of %d", zc.RxCopiedBytes, zc.RxMappedBytes, r.Received, r.Sent)
					}
					t.Logf("verdict: %s\nreason: %s", p.Zerocopy.Verdict, p.Zerocopy.Reason)
				})
			}
		})
	}
}

func zeroCopyTaken(t *testing.T, zc *report.Zerocopy, r transferChildResult) {
	t.Helper()
	if zc.TxBytes != r.Sent || zc.TxSplicedBytes != r.Sent || zc.TxCopiedBytes != 0 || zc.TxDeferredCopyBytes != 0 {
		t.Errorf("%+v, sent %d", zc, r.Sent)
	}
	if !strings.Contains(zc.Verdict, fmt.Sprintf(": zero-copy taken for %.1f MiB (100%%)", float64(r.Sent)/(1<<20))) {
		t.Errorf("verdict %q", zc.Verdict)
	}
}

func copiedOnLocalDelivery(t *testing.T, zc *report.Zerocopy, r transferChildResult) {
	t.Helper()
	if zc.TxBytes != r.Sent || zc.TxPinnedBytes != r.Sent || zc.TxDeferredCopyBytes != r.Sent || zc.TxCopiedBytes != 0 {
		t.Errorf("%+v, sent %d", zc, r.Sent)
	}
	if !strings.Contains(zc.Verdict, fmt.Sprintf("zero-copy requested but %.1f MiB copied on local delivery (loopback)", float64(r.Sent)/(1<<20))) {
		t.Errorf("verdict %q", zc.Verdict)
	}
	if zc.ZCCompletions != r.Completions || zc.ZCCompletionsCopied != r.Copied {
		t.Errorf("completions %d copied %d; the child saw %d copied %d", zc.ZCCompletions, zc.ZCCompletionsCopied, r.Completions, r.Copied)
	}
}
