package workload

import (
	"fmt"
	"testing"

	"github.com/zcprof/zcprof/profiler/testenv"
)

// TestSendMethodsRead: every send method into read(), exact bytes, intact.
// An odd size exercises pattern offsets that do not line up with pages.
func TestSendMethodsRead(t *testing.T) {
	requireRoot(t)
	for _, m := range Methods {
		for _, size := range []int{64 << 10, 10000, 2<<20 + 3} {
			t.Run(fmt.Sprintf("%s/%d", m, size), func(t *testing.T) {
				cfg := defaults(m, RxRead)
				cfg.Size = size
				cfg.Bytes = testenv.Pick[int64](8<<20, 2<<20) + 12345 // not a multiple of size: short last call
				res := runTransfer(t, cfg)
				checkExact(t, cfg, res)
			})
		}
	}
}

// TestRxMethods: the other receive paths behind a plain write().
func TestRxMethods(t *testing.T) {
	requireRoot(t)
	for _, rx := range []string{RxTrunc, RxSplice, RxZerocopy} {
		t.Run(rx, func(t *testing.T) {
			cfg := defaults(MethodWrite, rx)
			res := runTransfer(t, cfg)
			checkExact(t, cfg, res)
		})
	}
}

// TestTwoStreamsPinned: two streams, sender and receiver pinned.
func TestTwoStreamsPinned(t *testing.T) {
	requireRoot(t)
	cfg := defaults(MethodSend, RxRead)
	cfg.Streams = 2
	cfg.SenderCPU, cfg.ReceiverCPU = 0, 1%numCPU()
	res := runTransfer(t, cfg)
	checkExact(t, cfg, res)
}
