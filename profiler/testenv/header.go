package testenv

import (
	"regexp"
	"strconv"
	"testing"
)

// CheckMirrored fails t for each constant of want that the C header
// (named file, as bpf embeds it) lacks or gives another value.
func CheckMirrored(t testing.TB, header []byte, file string, want map[string]int) {
	t.Helper()
	c := HeaderConstants(header)
	for name, v := range want {
		got, ok := c[name]
		if !ok {
			t.Errorf("%s: not in %s", name, file)
			continue
		}
		if got != v {
			t.Errorf("%s = %d in %s, %d in Go", name, got, file, v)
		}
	}
}

// HeaderConstants reads the numeric constants of a C header: enum members
// written `NAME = 1,` and `#define NAME VALUE` where VALUE is a number or
// one of those members. A test compares them with the Go constants that
// mirror the header (the generated loaders carry the structs, not these).
func HeaderConstants(b []byte) map[string]int {
	c := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^\s*([A-Z][A-Z0-9_]+)\s*=\s*(\d+)\s*,`).FindAllSubmatch(b, -1) {
		v, _ := strconv.Atoi(string(m[2]))
		c[string(m[1])] = v
	}
	for _, m := range regexp.MustCompile(`(?m)^#define\s+([A-Z][A-Z0-9_]+)\s+([A-Z0-9_]+)\s*$`).FindAllSubmatch(b, -1) {
		if v, ok := c[string(m[2])]; ok {
			c[string(m[1])] = v
		} else if v, err := strconv.Atoi(string(m[2])); err == nil {
			c[string(m[1])] = v
		}
	}
	return c
}
