package workload

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestPattern(t *testing.T) {
	p := newPattern(1000)
	file := make([]byte, 3*patternPeriod)
	fillPattern(file, 0)
	for _, off := range []int64{0, 1, 250, 251, 252, 1 << 40} {
		b := p.at(off, 1000)
		if b[0] != byte(off%patternPeriod) || !p.check(off, b) {
			t.Errorf("offset %d: first byte %d", off, b[0])
		}
		if p.check(off+1, b) {
			t.Errorf("offset %d: shifted chunk passed the check", off)
		}
	}
	if fileLen%patternPeriod != 0 || !p.check(0, file) || !p.check(fileLen, file) {
		t.Error("payload file does not loop seamlessly")
	}
}

// TestZerocopyNotificationParse: ranges [lo, hi] add hi-lo+1 sends
// (wrapping u32 ids), COPIED is counted per range.
func TestZerocopyNotificationParse(t *testing.T) {
	cmsg := func(lo, hi uint32, code uint8) []byte {
		ee := unix.SockExtendedErr{Origin: unix.SO_EE_ORIGIN_ZEROCOPY, Code: code, Info: lo, Data: hi}
		data := unsafe.Slice((*byte)(unsafe.Pointer(&ee)), unsafe.Sizeof(ee))
		b := make([]byte, unix.CmsgSpace(len(data)))
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		h.Level, h.Type = unix.SOL_IP, unix.IP_RECVERR
		h.SetLen(unix.CmsgLen(len(data)))
		copy(b[unix.CmsgLen(0):], data)
		return b
	}
	var res StreamResult
	for _, c := range []struct {
		lo, hi uint32
		code   uint8
	}{{0, 9, 1}, {10, 10, 0}, {0xfffffffe, 1, 1}} {
		if err := countZerocopyNotification(cmsg(c.lo, c.hi, c.code), &res); err != nil {
			t.Fatal(err)
		}
	}
	if res.ZCCompletions != 15 || res.ZCCopied != 14 {
		t.Fatalf("completions %d copied %d, want 15/14", res.ZCCompletions, res.ZCCopied)
	}
}
