package attrib

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zcprof/zcprof/workload"
)

// fixtureRuns are the transfers whose stacks are committed under testdata/.
var fixtureRuns = []struct {
	name string
	cfg  workload.Config
}{
	{"write_read", workload.Config{Method: workload.MethodWrite, RxMethod: workload.RxRead}},
	{"sendfile_read", workload.Config{Method: workload.MethodSendfile, RxMethod: workload.RxRead}},
	{"splice_read", workload.Config{Method: workload.MethodSplice, RxMethod: workload.RxRead}},
	{"msg_zerocopy_read", workload.Config{Method: workload.MethodMsgZerocopy, RxMethod: workload.RxRead}},
	{"io_uring_zc_read", workload.Config{Method: workload.MethodIOUringZC, RxMethod: workload.RxRead}},
	{"msg_zerocopy_zerocopy", workload.Config{Method: workload.MethodMsgZerocopy, RxMethod: workload.RxZerocopy}},
}

// TestRecordFixtures records real kernel stacks into testdata/ (run by hand
// as root with ZCPROF_RECORD_FIXTURES=1; the rule tests read them without
// privileges).
func TestRecordFixtures(t *testing.T) {
	if os.Getenv("ZCPROF_RECORD_FIXTURES") != "1" {
		t.Skip("set ZCPROF_RECORD_FIXTURES=1 (as root) to re-record testdata/*.folded")
	}
	requireBPF(t)
	for _, fr := range fixtureRuns {
		cfg := fr.cfg
		cfg.Size, cfg.Streams, cfg.Duration = 64<<10, 1, time.Second
		cfg.SenderCPU, cfg.ReceiverCPU = -1, -1
		run := runSampled(t, cfg, 4999)
		path := filepath.Join("testdata", fr.name+".folded")
		if err := os.WriteFile(path, []byte(run.folded()), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d samples, %d bytes", path, run.samples.Total, run.res.SentBytes())
	}
}
