package profiler

import (
	"fmt"

	"github.com/zcprof/zcprof/profiler/report"
)

// requestedZerocopy classifies bytes by what the syscalls asked for. What
// the kernel then did (deferred copies on local delivery, MSG_ZEROCOPY
// ignored without SO_ZEROCOPY) needs the attribution programs; until they
// fill it in, the verdict says it is the request only.
func requestedZerocopy(paths []report.Path) *report.Zerocopy {
	zc := &report.Zerocopy{}
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
		if p.Path[:3] == "tx." {
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
	zc.Reason = "classified by syscall request (tx.write copies; sendfile/splice reference pages; MSG_ZEROCOPY/io_uring pin); the kernel's own decision is not traced by the accounting backend"
	return zc
}
