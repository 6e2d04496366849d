package byteclass

import (
	"strings"
	"testing"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/testenv"
)

// TestClassesMirrored: every class BPF counts has the value enum zcb_class
// gives it in bpf/zcbytes.h, and the Go-only classes come after NR_ZCB.
func TestClassesMirrored(t *testing.T) {
	want := map[string]Class{
		"ZCB_TX_COPY": ClassTxCopy, "ZCB_TX_COPY_ZC_IGNORED": ClassTxCopyZCIgnored, "ZCB_TX_COPY_NO_SG": ClassTxCopyNoSG,
		"ZCB_TX_SPLICE": ClassTxSplice, "ZCB_TX_SPLICE_SRC_COPY": ClassTxSpliceSourceCopy, "ZCB_TX_PINNED": ClassTxPinned,
		"ZCB_TX_UNCLASSIFIED": ClassTxUnclassified, "ZCB_DEFERRED_LOOPBACK": ClassDeferredLoopback,
		"ZCB_DEFERRED_VETH": ClassDeferredVeth, "ZCB_DEFERRED_OTHER": ClassDeferredOther, "ZCB_DEFERRED_TAP": ClassDeferredTap,
		"ZCB_ERRQ_DONE": ClassErrqDone, "ZCB_ERRQ_COPIED": ClassErrqCopied, "ZCB_URING_NOTIF": ClassUringNotif,
		"ZCB_URING_COPIED": ClassUringCopied, "ZCB_RX_COPY": ClassRxCopy, "ZCB_RX_MAPPED": ClassRxMapped,
		"ZCB_RETRANS_ZC": ClassRetransZC, "ZCB_TX_COPY_ULP": ClassTxCopyULP, "ZCB_RX_DISCARD": ClassRxDiscard,
		"NR_ZCB": ClassTxCopyWrite,
	}
	asInts := map[string]int{}
	for name, c := range want {
		asInts[name] = int(c)
	}
	testenv.CheckMirrored(t, bpf.ZcbytesHeader, "bpf/zcbytes.h", asInts)
	n := 0
	for name := range testenv.HeaderConstants(bpf.ZcbytesHeader) {
		if strings.HasPrefix(name, "ZCB_") && name != "ZCB_NR_DEFERRED" {
			n++
		}
	}
	if n != int(ClassTxCopyWrite) {
		t.Errorf("bpf/zcbytes.h has %d classes, Go mirrors %d", n, ClassTxCopyWrite)
	}
	for cl := Class(0); cl < numClasses; cl++ {
		if cl.String() == "" {
			t.Errorf("class %d has no name", cl)
		}
	}
}
