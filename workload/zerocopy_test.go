package workload

import (
	"testing"

	"github.com/zcprof/zcprof/profiler/testenv"
)

// TestZerocopySendLoopback: on loopback every MSG_ZEROCOPY / SEND_ZC send
// is completed, and every completion is COPIED (skb_copy_ubufs on local
// delivery, docs/architecture.md).
func TestZerocopySendLoopback(t *testing.T) {
	requireRoot(t)
	for _, m := range []string{MethodMsgZerocopy, MethodIOUringZC} {
		t.Run(m, func(t *testing.T) {
			cfg := defaults(m, RxRead)
			res := runTransfer(t, cfg)
			checkExact(t, cfg, res)
			s := res.Streams[0]
			t.Logf("%s: sends %d completions %d copied %d notifications %d", m, s.SendCalls, s.ZCCompletions, s.ZCCopied, s.ZCNotifications)
			if s.ZCCompletions != s.SendCalls {
				t.Errorf("completions %d, want one per send (%d)", s.ZCCompletions, s.SendCalls)
			}
			if s.ZCCopied != s.ZCCompletions {
				t.Errorf("copied %d of %d completions; loopback always copies", s.ZCCopied, s.ZCCompletions)
			}
			if s.ZCNotifications == 0 || s.ZCNotifications > s.ZCCompletions {
				t.Errorf("notifications %d for %d completions", s.ZCNotifications, s.ZCCompletions)
			}
		})
	}
}

// TestNoSockZerocopy: MSG_ZEROCOPY without SO_ZEROCOPY is silently a copy:
// no notifications at all.
func TestNoSockZerocopy(t *testing.T) {
	requireRoot(t)
	cfg := defaults(MethodMsgZerocopy, RxRead)
	cfg.NoSockZerocopy = true
	res := runTransfer(t, cfg)
	checkExact(t, cfg, res)
	if s := res.Streams[0]; s.ZCCompletions != 0 || s.ZCNotifications != 0 {
		t.Errorf("completions %d notifications %d, want none", s.ZCCompletions, s.ZCNotifications)
	}
}

// TestZerocopyReceive: behind a zero-copy sender, skb_copy_ubufs repacks
// the data into order-0 pages that TCP_ZEROCOPY_RECEIVE can map; behind
// write() nothing maps (compound page frags) and all is copied.
func TestZerocopyReceive(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct {
		method string
		mapped bool
	}{
		{MethodMsgZerocopy, true},
		{MethodIOUringZC, true},
		{MethodWrite, false},
	} {
		t.Run(c.method, func(t *testing.T) {
			cfg := defaults(c.method, RxZerocopy)
			cfg.Bytes = testenv.Pick[int64](32<<20, 16<<20)
			net0 := testenv.NetCounters(t)
			res := runTransfer(t, cfg)
			checkExact(t, cfg, res)
			s := res.Streams[0]
			if s.RxMappedBytes+s.RxCopiedBytes != cfg.Bytes {
				t.Errorf("mapped %d + copied %d != %d", s.RxMappedBytes, s.RxCopiedBytes, cfg.Bytes)
			}
			t.Logf("%s: mapped %d (%.1f%%) copied %d, %d getsockopt+recv calls; TCP counters: %s", c.method, s.RxMappedBytes,
				100*float64(s.RxMappedBytes)/float64(cfg.Bytes), s.RxCopiedBytes, s.RecvCalls, testenv.NetCountersMoved(t, net0))
			if c.mapped {
				testenv.CheckMappedShare(t, uint64(s.RxMappedBytes), uint64(cfg.Bytes), net0)
			}
		})
	}
}
