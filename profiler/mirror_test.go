package profiler

import (
	"testing"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/testenv"
)

// TestAccountingConstantsMirrored: the Go constants that mirror
// bpf/accounting.h here (the filter bits) have the values the C has; the
// paths, contexts and probe key are checked in profiler/taxonomy. The
// generated loaders carry the structs but not these.
func TestAccountingConstantsMirrored(t *testing.T) {
	testenv.CheckMirrored(t, bpf.AccountingHeader, "bpf/accounting.h", map[string]int{
		"ZC_FILTER_ALL": filterAll, "ZC_FILTER_TGID": filterTgid, "ZC_FILTER_TID": filterTid,
		"ZC_FILTER_CGROUP": filterCgroup, "ZC_FILTER_COMM": filterComm,
	})
}
