package run

import (
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"
)

// assertGone: none of the programs a run attached is still loaded (the
// kernel does not reuse ids soon).
func assertGone(t *testing.T, ids []uint32) {
	t.Helper()
	if len(ids) < 10 {
		t.Fatalf("run reported %d program ids, want the 10+ it attached", len(ids))
	}
	for _, id := range ids {
		p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
		if err == nil {
			p.Close()
			t.Errorf("program %d still loaded after the run", id)
		} else if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("program %d: %v", id, err)
		}
	}
}
