package attrib

import "testing"

// A key that reads lower in the later of two readings gives no
// difference, not one wrapped around to 2^64.
func TestSubCountsNeverWraps(t *testing.T) {
	got := subCounts(map[string]uint64{"same": 5, "grew": 9, "fell": 2, "new": 1}, map[string]uint64{"same": 5, "grew": 4, "fell": 3})
	want := map[string]uint64{"grew": 5, "new": 1}
	if len(got) != len(want) || got["grew"] != 5 || got["new"] != 1 {
		t.Errorf("subCounts = %v, want %v", got, want)
	}
}
