package profiler

import (
	"slices"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// ZerocopyFor falls back to the syscall request, and says so, when the
// byte-class programs were not loaded; per path it names the splicer.
func TestZerocopyForThreads(t *testing.T) {
	noClasses := []ThreadDelta{{Counters: map[PathCtx]Counter{{taxonomy.PathTxSendfile, taxonomy.CtxTask}: {Calls: 4, Bytes: 1 << 20}}}}
	zc := ZerocopyFor(noClasses)
	if zc.Source != report.ZerocopySourceRequest || zc.TxSplicedBytes != 1<<20 || !strings.Contains(zc.Reason, "not loaded") {
		t.Errorf("fallback: %+v", zc)
	}
	// Without them, a MSG_TRUNC receive's bytes are still told apart: the
	// accounting counts them itself.
	trunc := []ThreadDelta{{
		Counters: map[PathCtx]Counter{{taxonomy.PathRxRead, taxonomy.CtxTask}: {Calls: 5, Bytes: 5 << 20}},
		ByteClasses: map[byteclass.PathClass]byteclass.Count{
			{Path: taxonomy.PathRxRead, Class: byteclass.ClassRxDiscard}: {Bytes: 4 << 20, Events: 4},
		},
	}}
	zc = ZerocopyFor(trunc)
	if zc.Source != report.ZerocopySourceRequest || zc.RxDiscardedBytes != 4<<20 || zc.RxCopiedBytes != 1<<20 {
		t.Errorf("MSG_TRUNC by request: %+v", zc)
	}
	if want := "receive: 4.0 MiB (80%) discarded without copy (MSG_TRUNC); 1.0 MiB (20%) read by copy"; !strings.Contains(zc.Verdict, want) {
		t.Errorf("MSG_TRUNC by request: verdict %q, want %q in it", zc.Verdict, want)
	}

	th := []ThreadDelta{{
		Counters: map[PathCtx]Counter{
			{taxonomy.PathTxSendfile, taxonomy.CtxTask}: {Calls: 4, Bytes: 1 << 20},
			{taxonomy.PathTxWrite, taxonomy.CtxTask}:    {Calls: 1, Bytes: 1 << 20},
		},
		ByteClasses: map[byteclass.PathClass]byteclass.Count{
			{Path: taxonomy.PathTxSendfile, Class: byteclass.ClassTxSpliceSourceCopy}: {Bytes: 1 << 20, Events: 16},
			{Path: taxonomy.PathTxWrite, Class: byteclass.ClassTxCopy}:                {Bytes: 1 << 20, Events: 1},
		},
		Classified: true,
	}}
	zc = ZerocopyFor(th)
	if zc.Source != report.ZerocopySourceKernel || zc.TxCopiedBytes != 2<<20 || zc.TxSourceCopiedBytes != 1<<20 {
		t.Errorf("kernel: %+v", zc)
	}
	if !strings.Contains(zc.Verdict, "of sendfile copied from a source that cannot splice") {
		t.Errorf("process verdict %q", zc.Verdict)
	}
	_, paths := Sum(th).Entry()
	byteclass.Annotate(paths, byteClassesOf(th))
	for _, p := range paths {
		switch p.Path {
		case "tx.sendfile":
			if p.Zerocopy == nil || !strings.HasPrefix(p.Zerocopy.Verdict, "sendfile from a source that cannot splice") {
				t.Errorf("tx.sendfile: %+v", p.Zerocopy)
			}
		case "tx.write":
			if p.Zerocopy == nil || p.Zerocopy.Verdict != "copy: every byte copied on send (1.0 MiB written)" {
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
// thread, and every thread of an interval with the byte-class programs
// gets a map and is marked classified.
func TestDeltaByteClasses(t *testing.T) {
	threads := map[uint32]ThreadInfo{1: {Gen: 1, TID: 10, TGID: 10}, 2: {Gen: 2, TID: 11, TGID: 10}}
	prev := &Snapshot{MonoNS: 1, Counters: map[Key]Counter{}, Threads: threads, Clocks: map[uint32]Clock{},
		ByteClasses: map[byteclass.Key]byteclass.Count{{Gen: 1, Path: taxonomy.PathTxWrite, Class: byteclass.ClassTxCopy}: {Bytes: ^uint64(0), Events: 7}}, ByteClassDrops: 1}
	cur := &Snapshot{MonoNS: 2, Threads: threads, Clocks: map[uint32]Clock{},
		Counters: map[Key]Counter{{2, taxonomy.PathUser, taxonomy.CtxTask}: {NS: 5}},
		ByteClasses: map[byteclass.Key]byteclass.Count{
			{Gen: 1, Path: taxonomy.PathTxWrite, Class: byteclass.ClassTxCopy}:           {Bytes: 99, Events: 9},
			{Gen: 0, Path: taxonomy.PathTxWrite, Class: byteclass.ClassDeferredLoopback}: {Bytes: 5}, // no owner: not a thread
			{Gen: 1, Path: taxonomy.PathTxMsgZerocopy, Class: byteclass.ClassErrqCopied}: {Events: 3},
		}, ByteClassDrops: 3, Classified: true}
	iv := Delta(prev, cur)
	if iv.ByteClassDrops != 2 || len(iv.Threads) != 2 {
		t.Fatalf("drops %d, %d threads", iv.ByteClassDrops, len(iv.Threads))
	}
	a, b := iv.Threads[0], iv.Threads[1]
	if got := a.ByteClasses[byteclass.PathClass{Path: taxonomy.PathTxWrite, Class: byteclass.ClassTxCopy}]; got != (byteclass.Count{Bytes: 100, Events: 2}) {
		t.Errorf("wrapped delta %+v", got)
	}
	if got := a.ByteClasses[byteclass.PathClass{Path: taxonomy.PathTxMsgZerocopy, Class: byteclass.ClassErrqCopied}]; got.Events != 3 {
		t.Errorf("completions %+v", got)
	}
	if b.ByteClasses == nil || len(b.ByteClasses) != 0 || !a.Classified || !b.Classified {
		t.Errorf("thread without byte classes: %v (classified %v %v)", b.ByteClasses, a.Classified, b.Classified)
	}
	// Without the programs: no thread classified, and only the threads
	// with a count (a MSG_TRUNC receive's) have a map.
	discard := byteclass.Key{Gen: 2, Path: taxonomy.PathRxRead, Class: byteclass.ClassRxDiscard}
	iv = Delta(&Snapshot{Counters: map[Key]Counter{}, ByteClasses: map[byteclass.Key]byteclass.Count{}},
		&Snapshot{Counters: map[Key]Counter{{1, taxonomy.PathUser, taxonomy.CtxTask}: {NS: 1}}, Threads: threads,
			ByteClasses: map[byteclass.Key]byteclass.Count{discard: {Bytes: 64, Events: 1}}})
	if len(iv.Threads) != 2 || iv.Threads[0].ByteClasses != nil || iv.Threads[0].Classified || iv.Threads[1].Classified ||
		iv.Threads[1].ByteClasses[byteclass.PathClass{Path: discard.Path, Class: discard.Class}] != (byteclass.Count{Bytes: 64, Events: 1}) {
		t.Errorf("without the byte-class programs: %+v", iv.Threads)
	}
}

// A verdict that depends on a byte-class source that could not attach
// says it cannot tell; sources its paths never used do not matter.
func TestMarkUnavailable(t *testing.T) {
	const m = 1 << 20
	missing := []string{"sendfile sources that cannot splice", "deferred copies on local delivery", "io_uring notifications"}
	sendfile := []ThreadDelta{{
		Counters: map[PathCtx]Counter{
			{taxonomy.PathTxSendfile, taxonomy.CtxTask}: {Calls: 16, Bytes: 16 * m},
			{taxonomy.PathRxRead, taxonomy.CtxTask}:     {Calls: 64, Bytes: 4 * m},
		},
		ByteClasses: map[byteclass.PathClass]byteclass.Count{
			{Path: taxonomy.PathTxSendfile, Class: byteclass.ClassTxSplice}: {Bytes: 16 * m, Events: 16},
		},
		Classified: true,
	}}
	p := ProcessEntry(1, sendfile, false)
	byteclass.MarkUnavailable(&p, missing)
	zc := p.Zerocopy
	if want := []string{"sendfile sources that cannot splice"}; !slices.Equal(zc.Unavailable, want) {
		t.Errorf("unavailable %q, want %q", zc.Unavailable, want)
	}
	want := "sendfile: no copy seen for 16.0 MiB (100%); receive: 4.0 MiB with no copy seen (MSG_TRUNC, or a copy not traced); " +
		"cannot tell what sendfile sources that cannot splice would show (not attached)"
	if zc.Verdict != want {
		t.Errorf("verdict\n got %q\nwant %q", zc.Verdict, want)
	}
	for _, path := range p.Paths {
		if path.Path == "rx.read" && (path.Zerocopy == nil || len(path.Zerocopy.Unavailable) != 0 ||
			path.Zerocopy.Verdict != "receive: 4.0 MiB discarded without copy (MSG_TRUNC)") {
			t.Errorf("rx.read: %+v", path.Zerocopy)
		}
	}
	// Nothing missing that matters: the words stay.
	q := ProcessEntry(1, sendfile, false)
	byteclass.MarkUnavailable(&q, []string{"io_uring notifications"})
	if q.Zerocopy.Unavailable != nil || !strings.HasPrefix(q.Zerocopy.Verdict, "sendfile: zero-copy taken for 16.0 MiB (100%)") {
		t.Errorf("%+v", q.Zerocopy)
	}
}
