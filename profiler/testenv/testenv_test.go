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
