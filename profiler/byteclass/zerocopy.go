package byteclass

import (
	"strings"

	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// Threads are the byte classes of a group of threads (a process, one side
// of a run cell, one thread), one map per thread (nil: none counted).
// Classified: the byte-class programs were loaded; without them the maps
// hold only what the accounting counts of a request itself
// (ClassRxDiscard).
type Threads struct {
	Classified bool
	Maps       []map[PathClass]Count
}

// Zerocopy is the zero-copy object of a group of threads (a process, or
// one side of a run cell), whose paths are paths (the accounting's
// entries, for the bytes each path returned): bytes as the kernel
// classified them, with the verdict. Without the byte-class programs it
// falls back to what the syscalls asked for, and says so.
func Zerocopy(paths []report.Path, threads Threads) *report.Zerocopy {
	t, ok := threads.sum(nil)
	if !ok {
		return requestedZerocopy(paths, t[ClassRxDiscard].Bytes)
	}
	return t.zerocopy(rxBytesOf(paths, threads), threads.verdictNames(nil))
}

// Annotate sets the zero-copy object of each socket path of an entry
// (from the same threads), where bytes were classified or received on it.
func Annotate(paths []report.Path, threads Threads) {
	for i := range paths {
		p, ok := taxonomy.PathByName(paths[i].Path)
		if !ok || !(strings.HasPrefix(paths[i].Path, "tx.") || strings.HasPrefix(paths[i].Path, "rx.")) {
			continue
		}
		t, loaded := threads.sum(&p)
		rx := rxBytesOf(paths[i:i+1], threads)
		if !loaded || t == (byteTotals{}) && rx == (rxPathBytes{}) {
			continue
		}
		paths[i].Zerocopy = t.zerocopy(rx, threads.verdictNames(&p))
	}
}

// rxBytesOf is what the receive paths among paths returned (path
// counters: TCP sockets only), with the part of rx.read TCP copied.
func rxBytesOf(paths []report.Path, threads Threads) rxPathBytes {
	var rx rxPathBytes
	for _, p := range paths {
		switch p.Path {
		case taxonomy.PathRxRead.String():
			rx.read += p.Bytes
		case taxonomy.PathRxSplice.String():
			rx.splice += p.Bytes
		}
	}
	if rx.read > 0 {
		read := taxonomy.PathRxRead
		t, _ := threads.sum(&read)
		rx.readCopied = t[ClassRxCopy].Bytes
	}
	return rx
}

// sum adds the byte classes of the threads (of one path if set), and says
// whether the byte-class programs classified them (Classified).
func (threads Threads) sum(path *taxonomy.Path) (byteTotals, bool) {
	var t byteTotals
	for _, classes := range threads.Maps {
		for k, c := range classes {
			if k.Class >= numClasses || (path != nil && k.Path != *path) {
				continue
			}
			t[k.Class] = t[k.Class].Add(c)
		}
	}
	return t, threads.Classified
}

// verdictNames names the syscalls whose spliced and pinned bytes the
// threads sent (of one path if set).
func (threads Threads) verdictNames(path *taxonomy.Path) report.VerdictNames {
	var sendfile, splice, msgZC, uring bool
	for _, classes := range threads.Maps {
		for k, c := range classes {
			if c.Bytes == 0 || (path != nil && k.Path != *path) {
				continue
			}
			switch k.Class {
			case ClassTxSplice, ClassTxSpliceSourceCopy:
				sendfile = sendfile || k.Path == taxonomy.PathTxSendfile
				splice = splice || k.Path == taxonomy.PathTxSplice
			case ClassTxPinned:
				msgZC = msgZC || k.Path == taxonomy.PathTxMsgZerocopy
				uring = uring || k.Path == taxonomy.PathTxIOUring
			}
		}
	}
	return report.VerdictNames{Splicer: oneOrBoth(sendfile, splice, "sendfile", "splice"), Pinner: oneOrBoth(msgZC, uring, "MSG_ZEROCOPY", "io_uring SEND_ZC")}
}

// oneOrBoth names a, b or both ("" for neither: the report's default).
func oneOrBoth(isA, isB bool, a, b string) string {
	switch {
	case isA && !isB:
		return a
	case isB && !isA:
		return b
	}
	return ""
}

// requestedZerocopy classifies bytes by what the syscalls asked for: the
// fallback when the byte-class programs could not be loaded. An io_uring
// send may be SEND (a copy) or SEND_ZC: the path does not tell. discarded:
// the part of rx.read that receive calls with MSG_TRUNC returned, which
// TCP never copies.
func requestedZerocopy(paths []report.Path, discarded uint64) *report.Zerocopy {
	zc := &report.Zerocopy{Source: report.ZerocopySourceRequest}
	var sendfile, splice bool
	names := report.VerdictNames{Pinner: "MSG_ZEROCOPY"}
	for _, p := range paths {
		switch p.Path {
		case taxonomy.PathTxWrite.String():
			zc.TxCopiedBytes += p.Bytes
		case taxonomy.PathTxSendfile.String(), taxonomy.PathTxSplice.String():
			zc.TxSplicedBytes += p.Bytes
			sendfile = sendfile || p.Path == taxonomy.PathTxSendfile.String()
			splice = splice || p.Path == taxonomy.PathTxSplice.String()
		case taxonomy.PathTxMsgZerocopy.String():
			zc.TxPinnedBytes += p.Bytes
		case taxonomy.PathTxIOUring.String():
			zc.TxUnclassifiedBytes += p.Bytes
		case taxonomy.PathRxRead.String():
			zc.RxCopiedBytes += p.Bytes
		case taxonomy.PathRxZerocopy.String():
			zc.RxMappedBytes += p.Bytes
		case taxonomy.PathRxSplice.String():
			zc.RxSplicedBytes += p.Bytes
		default:
			continue
		}
		if strings.HasPrefix(p.Path, "tx.") {
			zc.TxBytes += p.Bytes
		}
	}
	zc.RxDiscardedBytes = min(discarded, zc.RxCopiedBytes)
	zc.RxCopiedBytes -= zc.RxDiscardedBytes
	names.Splicer = oneOrBoth(sendfile, splice, "sendfile", "splice")
	report.Judge(zc, names)
	zc.Reason = "classified by syscall request only (tx.write copies; sendfile/splice reference pages; MSG_ZEROCOPY pins; an io_uring send may copy or pin, unclassified; rx.read is copied unless the call passed MSG_TRUNC, whose bytes TCP discards): the byte-class programs were not loaded (see backends.unavailable), so what the kernel then did is not known"
	return zc
}

// MarkUnavailable names, on each zero-copy object of an entry (its paths
// and threads too), the byte-class sources that could not be attached
// (profiler.Session.ByteClassSourcesUnavailable) its verdict depends on, and judges
// it again: a verdict then says it cannot tell instead of claiming no copy.
func MarkUnavailable(p *report.Process, sources []string) {
	if len(sources) == 0 {
		return
	}
	markUnavailable(p.Zerocopy, p.Paths, sources)
	for i := range p.Paths {
		markUnavailable(p.Paths[i].Zerocopy, p.Paths[i:i+1], sources)
	}
	for i := range p.Threads {
		for j := range p.Threads[i].Paths {
			markUnavailable(p.Threads[i].Paths[j].Zerocopy, p.Threads[i].Paths[j:j+1], sources)
		}
	}
}

// markUnavailable marks one object, whose bytes went through paths.
func markUnavailable(zc *report.Zerocopy, paths []report.Path, sources []string) {
	if zc == nil || zc.Source != report.ZerocopySourceKernel {
		return
	}
	used := map[string]bool{}
	for _, p := range paths {
		used[p.Path] = p.Calls+p.Bytes > 0
	}
	zc.Unavailable = nil
	for _, src := range sources {
		if sourceMatters(src, zc, used) {
			zc.Unavailable = append(zc.Unavailable, src)
		}
	}
	report.Judge(zc, zc.Names)
}

// sourceMatters says whether a missing byte-class source (the names of
// load.go's lost keys) could change what zc's verdict claims,
// given the paths its bytes went through.
func sourceMatters(src string, zc *report.Zerocopy, used map[string]bool) bool {
	switch src {
	case "sendfile sources that cannot splice":
		return used[taxonomy.PathTxSendfile.String()]
	case "splice sources that cannot splice":
		return used[taxonomy.PathTxSplice.String()]
	case "deferred copies on local delivery", "deferred copies for packet taps", "retransmitted zero-copy bytes", "MSG_ZEROCOPY completions":
		return zc.TxPinnedBytes > 0
	case "io_uring notifications", "io_uring send kind":
		return used[taxonomy.PathTxIOUring.String()]
	}
	return true // sends themselves, or a source this list does not know
}
