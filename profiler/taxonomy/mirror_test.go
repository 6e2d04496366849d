package taxonomy

import (
	"testing"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/testenv"
)

// TestTaxonomyMirrored: the Go constants that mirror bpf/accounting.h
// (paths, contexts, the probe key) have the values the C has. The
// generated loaders carry the structs but not these.
func TestTaxonomyMirrored(t *testing.T) {
	testenv.CheckMirrored(t, bpf.AccountingHeader, "bpf/accounting.h", map[string]int{
		"PATH_USER": int(PathUser), "PATH_TX_WRITE": int(PathTxWrite), "PATH_TX_MSG_ZEROCOPY": int(PathTxMsgZerocopy),
		"PATH_TX_SENDFILE": int(PathTxSendfile), "PATH_TX_SPLICE": int(PathTxSplice), "PATH_TX_IO_URING": int(PathTxIOUring),
		"PATH_RX_READ": int(PathRxRead), "PATH_RX_ZEROCOPY": int(PathRxZerocopy), "PATH_RX_SPLICE": int(PathRxSplice),
		"PATH_WAIT": int(PathWait), "PATH_OTHER": int(PathOther), "PATH_UNKNOWN": int(PathUnknown),
		"PATH_SYS_IDLE": int(PathSysIdle), "PATH_SYS_KSOFTIRQD": int(PathSysKsoftirqd), "PATH_SYS_OTHER_TASK": int(PathSysOtherTask),
		"NR_PATHS": int(numPaths),
		"CTX_TASK": int(CtxTask), "CTX_SOFTIRQ_NET_RX": int(CtxSoftirqNetRx), "CTX_SOFTIRQ_NET_TX": int(CtxSoftirqNetTx),
		"CTX_SOFTIRQ_OTHER": int(CtxSoftirqOther), "CTX_HARDIRQ": int(CtxHardirq), "NR_CTX": int(numCtx),
		"CTX_KERNEL_DIFF": int(CtxKernelDiff), "CTX_SWITCH_UNCERTAIN": int(CtxSwitchUncertain), "CTX_PROBE": int(CtxProbe),
		"PROBE_PATH": int(ProbePath),
	})
}
