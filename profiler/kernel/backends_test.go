package kernel

import "testing"

// The CLI and the library print the same line for a value they refuse.
func TestChoose(t *testing.T) {
	if err := Choose("--backend", "", Fentry, AttributionChoices()); err != nil {
		t.Errorf("fentry refused: %v", err)
	}
	err := Choose("--backend", "", "ebpf", AttributionChoices())
	if want := `--backend "ebpf": unknown (use auto, sampling, fentry, kprobe or none)`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	err = Choose("--accounting", " backend", "x", AccountingChoices())
	if want := `--accounting "x": unknown backend (use auto, tp_btf or raw_tp)`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	if err := Choose("--backend", "", "", AttributionChoices()); err == nil {
		t.Error(`"" accepted: the CLI refuses an empty --backend`)
	}
}
