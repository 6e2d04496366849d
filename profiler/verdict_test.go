package profiler

import (
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/report"
)

func totals(kv map[ByteClass]ByteCount) byteTotals {
	var t byteTotals
	for c, v := range kv {
		t[c] = v
	}
	return t
}

func TestZerocopyVerdicts(t *testing.T) {
	const m = 1 << 20
	b := func(n uint64) ByteCount { return ByteCount{Bytes: n, Events: n / (64 << 10)} }
	cases := []struct {
		name    string
		in      map[ByteClass]ByteCount
		splicer string
		verdict string // exact
		check   func(zc *report.Zerocopy) bool
	}{
		{
			name: "nothing", in: nil,
			verdict: "no TCP transfers",
		},
		{
			name: "write", in: map[ByteClass]ByteCount{ClassTxCopy: b(64 * m)},
			verdict: "copy: every byte copied on send",
			check:   func(zc *report.Zerocopy) bool { return zc.TxBytes == 64*m && zc.TxCopiedBytes == 64*m },
		},
		{
			name: "sendfile", in: map[ByteClass]ByteCount{ClassTxSplice: b(64 * m)}, splicer: "sendfile",
			verdict: "zero-copy taken",
			check:   func(zc *report.Zerocopy) bool { return zc.TxSplicedBytes == 64*m && zc.TxCopiedBytes == 0 },
		},
		{
			name: "msg_zerocopy to a NIC", in: map[ByteClass]ByteCount{ClassTxPinned: b(64 * m), ClassErrqDone: {Events: 1024}},
			verdict: "zero-copy taken",
		},
		{
			name: "msg_zerocopy on loopback",
			in: map[ByteClass]ByteCount{ClassTxPinned: b(64 * m), ClassDeferredLoopback: b(64*m + 128<<10), ClassRetransZC: b(128 << 10),
				ClassErrqDone: {Events: 1024}, ClassErrqCopied: {Events: 1024}},
			verdict: "zero-copy requested but copied on local delivery (loopback)",
			check: func(zc *report.Zerocopy) bool {
				return zc.TxPinnedBytes == 64*m && zc.TxDeferredCopyBytes == 64*m && zc.TxDeferredRecopyBytes == 128<<10 &&
					zc.TxDeferredVia["loopback"] == 64*m+128<<10 && zc.ZCCompletions == 1024 && zc.ZCCompletionsCopied == 1024 &&
					strings.Contains(zc.Reason, "1024 of 1024 completed MSG_ZEROCOPY sends reported COPIED")
			},
		},
		{
			name:    "io_uring SEND_ZC into a local namespace",
			in:      map[ByteClass]ByteCount{ClassTxPinned: b(8 * m), ClassDeferredVeth: b(8 * m), ClassUringNotif: {Events: 128}, ClassUringCopied: {Events: 128}},
			verdict: "zero-copy requested but copied on local delivery (veth)",
			check: func(zc *report.Zerocopy) bool {
				return strings.Contains(zc.Reason, "128 of 128 zero-copy notifications")
			},
		},
		{
			name:    "packet tap on the way out",
			in:      map[ByteClass]ByteCount{ClassTxPinned: b(8 * m), ClassDeferredTap: b(8 * m)},
			verdict: "zero-copy requested but copied on local delivery (packet tap)",
		},
		{
			name:    "loopback with a tap: two copies, each byte counted once",
			in:      map[ByteClass]ByteCount{ClassTxPinned: b(8 * m), ClassDeferredLoopback: b(8 * m), ClassDeferredTap: b(8 * m)},
			verdict: "zero-copy requested but copied on local delivery (loopback, packet tap)",
			check:   func(zc *report.Zerocopy) bool { return zc.TxDeferredCopyBytes == 16*m && zc.TxPinnedBytes == 8*m },
		},
		{
			name:    "MSG_ZEROCOPY without SO_ZEROCOPY",
			in:      map[ByteClass]ByteCount{ClassTxCopyZCIgnored: b(32 * m)},
			verdict: "MSG_ZEROCOPY ignored: SO_ZEROCOPY not set, every byte copied on send",
			check:   func(zc *report.Zerocopy) bool { return zc.TxCopiedBytes == 32*m && zc.TxCopiedZCIgnoredBytes == 32*m },
		},
		{
			name: "sendfile from O_DIRECT", in: map[ByteClass]ByteCount{ClassTxSpliceSourceCopy: b(32 * m)}, splicer: "sendfile",
			verdict: "sendfile from a source that cannot splice (O_DIRECT, DAX, procfs, /dev/zero ...): copied",
			check: func(zc *report.Zerocopy) bool {
				return zc.TxCopiedBytes == 32*m && zc.TxSourceCopiedBytes == 32*m && zc.TxSplicedBytes == 0
			},
		},
		{
			name:    "kTLS write and sendfile",
			in:      map[ByteClass]ByteCount{ClassTxCopyULP: b(4 * m)},
			verdict: "copy: kTLS (a TCP upper-layer protocol) copies every byte into its own records",
			check:   func(zc *report.Zerocopy) bool { return zc.TxCopiedBytes == 4*m && zc.TxSplicedBytes == 0 },
		},
		{
			name:    "route without scatter-gather",
			in:      map[ByteClass]ByteCount{ClassTxCopyNoSG: b(4 * m)},
			verdict: "zero-copy requested but copied on send: the route has no scatter-gather (TCP-MD5/AO, IPsec)",
		},
		{
			name:    "half spliced, half written",
			in:      map[ByteClass]ByteCount{ClassTxSplice: b(30 * m), ClassTxCopy: b(10 * m)},
			verdict: "zero-copy partially taken: 75% of bytes never copied: 25% copied on send",
		},
		{
			name:    "pinned, a third copied later",
			in:      map[ByteClass]ByteCount{ClassTxPinned: b(30 * m), ClassDeferredOther: b(10 * m)},
			verdict: "zero-copy partially taken: 67% of bytes never copied: 33% of pinned bytes copied later on local delivery (another device)",
		},
		{
			name:    "some sends ignored the flag",
			in:      map[ByteClass]ByteCount{ClassTxPinned: b(48 * m), ClassTxCopyZCIgnored: b(16 * m)},
			verdict: "zero-copy partially taken: 75% of bytes never copied: 25% copied on send (MSG_ZEROCOPY ignored for 16.0 MiB: SO_ZEROCOPY not set)",
		},
		{
			name:    "write plus a sendfile from procfs",
			in:      map[ByteClass]ByteCount{ClassTxCopy: b(16 * m), ClassTxSpliceSourceCopy: b(16 * m)},
			splicer: "sendfile",
			verdict: "copy: every byte copied on send (16.0 MiB of sendfile from a source that cannot splice)",
		},
		{
			name:    "a retransmitted skb alone is not a verdict",
			in:      map[ByteClass]ByteCount{ClassTxPinned: b(64 * m), ClassDeferredLoopback: b(64 << 10), ClassRetransZC: b(64 << 10)},
			verdict: "zero-copy taken",
			check: func(zc *report.Zerocopy) bool {
				return zc.TxDeferredCopyBytes == 0 && zc.TxDeferredRecopyBytes == 64<<10
			},
		},
		{
			name:    "sends begun before attach",
			in:      map[ByteClass]ByteCount{ClassTxSplice: b(63 * m), ClassTxUnclassified: b(1 * m)},
			verdict: "zero-copy partially taken: 98% of bytes never copied: 2% unclassified",
		},
		{
			name:    "read receiver",
			in:      map[ByteClass]ByteCount{ClassRxCopy: b(64 * m)},
			verdict: "receive copied",
		},
		{
			name:    "zerocopy receiver",
			in:      map[ByteClass]ByteCount{ClassRxMapped: b(63 * m), ClassRxCopy: b(1 * m)},
			verdict: "receive: 98% mapped (TCP_ZEROCOPY_RECEIVE), 2% copied",
		},
		{
			name:    "one process sends and receives",
			in:      map[ByteClass]ByteCount{ClassTxSplice: b(8 * m), ClassRxCopy: b(8 * m)},
			verdict: "zero-copy taken; receive copied",
			check:   func(zc *report.Zerocopy) bool { return zc.RxCopiedBytes == 8*m && zc.TxBytes == 8*m },
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			splicer := c.splicer
			if splicer == "" {
				splicer = "sendfile/splice"
			}
			zc := totals(c.in).zerocopy(splicer)
			if zc.Verdict != c.verdict {
				t.Errorf("verdict\n got %q\nwant %q", zc.Verdict, c.verdict)
			}
			if zc.Source != report.ZerocopySourceKernel || zc.Reason == "" {
				t.Errorf("source %q reason %q", zc.Source, zc.Reason)
			}
			if c.check != nil && !c.check(zc) {
				t.Errorf("figures: %+v", zc)
			}
			// Send classes partition the sent bytes.
			if zc.TxCopiedBytes+zc.TxSplicedBytes+zc.TxPinnedBytes+zc.TxUnclassifiedBytes != zc.TxBytes {
				t.Errorf("tx classes do not add up: %+v", zc)
			}
		})
	}
}

// ZerocopyFor falls back to the syscall request, and says so, when the
// byte-class programs were not loaded; per path it names the splicer.
func TestZerocopyForThreads(t *testing.T) {
	noClasses := []ThreadDelta{{Counters: map[PathCtx]Counter{{PathTxSendfile, CtxTask}: {Calls: 4, Bytes: 1 << 20}}}}
	zc := ZerocopyFor(noClasses)
	if zc.Source != report.ZerocopySourceRequest || zc.TxSplicedBytes != 1<<20 || !strings.Contains(zc.Reason, "not loaded") {
		t.Errorf("fallback: %+v", zc)
	}

	th := []ThreadDelta{{
		Counters: map[PathCtx]Counter{
			{PathTxSendfile, CtxTask}: {Calls: 4, Bytes: 1 << 20},
			{PathTxWrite, CtxTask}:    {Calls: 1, Bytes: 1 << 20},
		},
		ByteClasses: map[PathClass]ByteCount{
			{PathTxSendfile, ClassTxSpliceSourceCopy}: {Bytes: 1 << 20, Events: 16},
			{PathTxWrite, ClassTxCopy}:                {Bytes: 1 << 20, Events: 1},
		},
	}}
	zc = ZerocopyFor(th)
	if zc.Source != report.ZerocopySourceKernel || zc.TxCopiedBytes != 2<<20 || zc.TxSourceCopiedBytes != 1<<20 {
		t.Errorf("kernel: %+v", zc)
	}
	if !strings.Contains(zc.Verdict, "of sendfile from a source that cannot splice") {
		t.Errorf("process verdict %q", zc.Verdict)
	}
	_, paths := Sum(th).Entry()
	annotatePaths(paths, th)
	for _, p := range paths {
		switch p.Path {
		case "tx.sendfile":
			if p.Zerocopy == nil || !strings.HasPrefix(p.Zerocopy.Verdict, "sendfile from a source that cannot splice") {
				t.Errorf("tx.sendfile: %+v", p.Zerocopy)
			}
		case "tx.write":
			if p.Zerocopy == nil || p.Zerocopy.Verdict != "copy: every byte copied on send" {
				t.Errorf("tx.write: %+v", p.Zerocopy)
			}
		default:
			if p.Zerocopy != nil {
				t.Errorf("%s has a zerocopy object", p.Path)
			}
		}
	}
}

// Byte classes go through Delta like the CPU counters: modular, per
// thread, and every thread of an interval with byte classes gets a map.
func TestDeltaByteClasses(t *testing.T) {
	threads := map[uint32]ThreadInfo{1: {Gen: 1, TID: 10, TGID: 10}, 2: {Gen: 2, TID: 11, TGID: 10}}
	prev := &Snapshot{MonoNS: 1, Counters: map[Key]Counter{}, Threads: threads, Clocks: map[uint32]Clock{},
		ByteClasses: map[ByteKey]ByteCount{{1, PathTxWrite, ClassTxCopy}: {Bytes: ^uint64(0), Events: 7}}, ByteClassDrops: 1}
	cur := &Snapshot{MonoNS: 2, Threads: threads, Clocks: map[uint32]Clock{},
		Counters: map[Key]Counter{{2, PathUser, CtxTask}: {NS: 5}},
		ByteClasses: map[ByteKey]ByteCount{
			{1, PathTxWrite, ClassTxCopy}:           {Bytes: 99, Events: 9},
			{0, PathTxWrite, ClassDeferredLoopback}: {Bytes: 5}, // no owner: not a thread
			{1, PathTxMsgZerocopy, ClassErrqCopied}: {Events: 3},
		}, ByteClassDrops: 3}
	iv := Delta(prev, cur)
	if iv.ByteClassDrops != 2 || len(iv.Threads) != 2 {
		t.Fatalf("drops %d, %d threads", iv.ByteClassDrops, len(iv.Threads))
	}
	a, b := iv.Threads[0], iv.Threads[1]
	if got := a.ByteClasses[PathClass{PathTxWrite, ClassTxCopy}]; got != (ByteCount{Bytes: 100, Events: 2}) {
		t.Errorf("wrapped delta %+v", got)
	}
	if got := a.ByteClasses[PathClass{PathTxMsgZerocopy, ClassErrqCopied}]; got.Events != 3 {
		t.Errorf("completions %+v", got)
	}
	if b.ByteClasses == nil || len(b.ByteClasses) != 0 {
		t.Errorf("thread without byte classes: %v", b.ByteClasses)
	}
	// Without the feature, nil everywhere.
	iv = Delta(&Snapshot{Counters: map[Key]Counter{}}, &Snapshot{Counters: map[Key]Counter{{1, PathUser, CtxTask}: {NS: 1}}, Threads: threads})
	if iv.Threads[0].ByteClasses != nil {
		t.Errorf("byte classes without the feature: %v", iv.Threads[0].ByteClasses)
	}
}

// A spurious retransmission the retransmit tracepoint did not flag (seen in
// CI: 12,563 bytes copied on loopback beyond the 32 MiB pinned): the excess
// is a re-copy, not more deferred payload.
func TestDeferredBeyondPinnedIsRecopy(t *testing.T) {
	const sent = 32 << 20
	zc := totals(map[ByteClass]ByteCount{
		ClassTxPinned:         {Bytes: sent, Events: 512},
		ClassDeferredLoopback: {Bytes: sent + 12563, Events: 520},
	}).zerocopy("")
	if zc.TxDeferredCopyBytes != sent || zc.TxDeferredRecopyBytes != 12563 || zc.TxDeferredVia["loopback"] != sent+12563 {
		t.Fatalf("deferred %d recopy %d via %v", zc.TxDeferredCopyBytes, zc.TxDeferredRecopyBytes, zc.TxDeferredVia)
	}
	if !strings.Contains(zc.Verdict, "copied on local delivery (loopback)") {
		t.Fatalf("verdict %q", zc.Verdict)
	}
}
