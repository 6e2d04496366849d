package testenv

import (
	"slices"
	"testing"
)

func TestExpectations(t *testing.T) {
	t.Setenv("ZCPROF_EXPECT_FUNCTIONS_OK", " a, b,,c ")
	t.Setenv("ZCPROF_EXPECT_ATTACH_UNAVAILABLE", "")
	t.Setenv(EnvScale, "small")

	if l, ok := ExpectList("FUNCTIONS_OK"); !ok || !slices.Equal(l, []string{"a", "b", "c"}) {
		t.Errorf("ExpectList = %q, %v", l, ok)
	}
	if l, ok := ExpectList("ATTACH_UNAVAILABLE"); !ok || l != nil {
		t.Errorf("set but empty: %q, %v", l, ok)
	}
	if _, ok := Expect("NOT_SET_ANYWHERE"); ok {
		t.Error("unset expectation reported as set")
	}
	if !Expected("FUNCTIONS_OK", "b") || Expected("FUNCTIONS_OK", "d") {
		t.Error("Expected")
	}
	if !Small() || Pick(100, 5) != 5 {
		t.Error("small scale not picked")
	}
	t.Setenv(EnvScale, "")
	if Pick(100, 5) != 100 {
		t.Error("normal scale not picked")
	}
}

func TestParseNetCounters(t *testing.T) {
	text := "Tcp: RtoAlgorithm MaxConn RetransSegs\nTcp: 1 -1 42\nUdp: InDatagrams\nUdp: 7\n"
	got := map[string]uint64{}
	parseNetCounters(text, got)
	want := map[string]uint64{"Tcp.RtoAlgorithm": 1, "Tcp.RetransSegs": 42, "Udp.InDatagrams": 7}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	d := NetCounterDelta(map[string]uint64{"a": 1, "b": 5}, map[string]uint64{"a": 3, "b": 5, "c": 2})
	if len(d) != 2 || d["a"] != 2 || d["c"] != 2 {
		t.Errorf("delta %v", d)
	}
}
