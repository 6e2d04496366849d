package workload

import "bytes"

// The payload is deterministic: the byte at stream offset i is i mod 251.
// 251 is prime, so no power-of-two size lines up with the period and a
// misplaced or repeated chunk shows up as a mismatch.
const patternPeriod = 251

// fileLen is the payload file length: a multiple of the period, so looping
// over the file keeps the pattern continuous.
const fileLen = patternPeriod * 64 * 1024

// pattern holds the pattern from offset 0 with period of slack, so any
// window of up to n bytes at any stream offset is a subslice.
type pattern []byte

func newPattern(n int) pattern {
	p := make(pattern, n+patternPeriod)
	fillPattern(p, 0)
	return p
}

func fillPattern(b []byte, off int64) {
	v := byte(off % patternPeriod)
	for i := range b {
		b[i] = v
		if v++; v == patternPeriod {
			v = 0
		}
	}
}

// at returns the n pattern bytes that belong at stream offset off.
func (p pattern) at(off int64, n int) []byte {
	s := int(off % patternPeriod)
	return p[s : s+n]
}

// check reports whether b is the pattern at stream offset off.
func (p pattern) check(off int64, b []byte) bool {
	return bytes.Equal(b, p.at(off, len(b)))
}
