package profiler

import (
	"fmt"
	"strings"

	"github.com/zcprof/zcprof/profiler/report"
)

// ZerocopyFor is the zero-copy object of a group of threads (a process, or
// one side of a run cell): bytes as the kernel classified them, with the
// verdict. Without the byte-class programs (the threads carry no byte
// classes) it falls back to what the syscalls asked for, and says so.
func ZerocopyFor(threads []ThreadDelta) *report.Zerocopy {
	t, ok := sumByteClasses(threads, nil)
	if !ok {
		_, paths := Sum(threads).Entry()
		return requestedZerocopy(paths)
	}
	return t.zerocopy(splicerOf(threads))
}

// annotatePaths sets the zero-copy object of each socket path of an entry
// (from the same threads), where bytes were classified on it.
func annotatePaths(paths []report.Path, threads []ThreadDelta) {
	for i := range paths {
		p, ok := pathByName(paths[i].Path)
		if !ok || !(strings.HasPrefix(paths[i].Path, "tx.") || strings.HasPrefix(paths[i].Path, "rx.")) {
			continue
		}
		t, loaded := sumByteClasses(threads, &p)
		if !loaded || t == (byteTotals{}) {
			continue
		}
		splicer := "sendfile/splice"
		switch p {
		case PathTxSendfile:
			splicer = "sendfile"
		case PathTxSplice:
			splicer = "splice"
		}
		paths[i].Zerocopy = t.zerocopy(splicer)
	}
}

func pathByName(name string) (Path, bool) {
	for p := Path(0); p < numPaths; p++ {
		if p.String() == name {
			return p, true
		}
	}
	return 0, false
}

// sumByteClasses adds the byte classes of threads (of one path if set);
// false if none of them carries byte classes (feature not loaded).
func sumByteClasses(threads []ThreadDelta, path *Path) (byteTotals, bool) {
	var t byteTotals
	loaded := false
	for _, th := range threads {
		if th.ByteClasses == nil {
			continue
		}
		loaded = true
		for k, c := range th.ByteClasses {
			if k.Class >= numByteClasses || (path != nil && k.Path != *path) {
				continue
			}
			t[k.Class] = t[k.Class].add(c)
		}
	}
	return t, loaded
}

// splicerOf names the syscalls whose spliced bytes the threads sent.
func splicerOf(threads []ThreadDelta) string {
	var sendfile, splice bool
	for _, th := range threads {
		for k, c := range th.ByteClasses {
			if c.Bytes == 0 || (k.Class != ClassTxSplice && k.Class != ClassTxSpliceSourceCopy) {
				continue
			}
			sendfile = sendfile || k.Path == PathTxSendfile
			splice = splice || k.Path == PathTxSplice
		}
	}
	switch {
	case sendfile && !splice:
		return "sendfile"
	case splice && !sendfile:
		return "splice"
	}
	return "sendfile/splice"
}

// requestedZerocopy classifies bytes by what the syscalls asked for: the
// fallback when the byte-class programs could not be loaded.
func requestedZerocopy(paths []report.Path) *report.Zerocopy {
	zc := &report.Zerocopy{Source: report.ZerocopySourceRequest}
	for _, p := range paths {
		switch p.Path {
		case PathTxWrite.String():
			zc.TxCopiedBytes += p.Bytes
		case PathTxSendfile.String(), PathTxSplice.String():
			zc.TxSplicedBytes += p.Bytes
		case PathTxMsgZerocopy.String(), PathTxIOUring.String():
			zc.TxPinnedBytes += p.Bytes
		case PathRxRead.String():
			zc.RxCopiedBytes += p.Bytes
		case PathRxZerocopy.String():
			zc.RxMappedBytes += p.Bytes
		default:
			continue
		}
		if strings.HasPrefix(p.Path, "tx.") {
			zc.TxBytes += p.Bytes
		}
	}
	switch {
	case zc.TxBytes == 0:
		zc.Verdict = "no socket sends"
	case zc.TxCopiedBytes == zc.TxBytes:
		zc.Verdict = "copy"
	case zc.TxCopiedBytes == 0:
		zc.Verdict = "zero-copy requested"
	default:
		zc.Verdict = fmt.Sprintf("zero-copy requested for %.0f%% of bytes", 100*float64(zc.TxBytes-zc.TxCopiedBytes)/float64(zc.TxBytes))
	}
	zc.Reason = "classified by syscall request only (tx.write copies; sendfile/splice reference pages; MSG_ZEROCOPY/io_uring pin): the byte-class programs were not loaded (see backends.unavailable), so what the kernel then did is not known"
	return zc
}
