package testenv

import (
	"regexp"
	"strconv"
)

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
