package run

import (
	"github.com/zcprof/zcprof/workload"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1": 1, "65536": 65536, "64K": 65536, "64k": 65536, "64KiB": 65536, "8K": 8192,
		"1M": 1 << 20, "2MiB": 2 << 20, "1G": 1 << 30, " 4K ": 4096,
	} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "-1", "-4K", "garbage", "", "K", "1.5K", "64KB", "0x10", "99999999999999999999", "9223372036854775807K"} {
		if _, err := ParseSize(in); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseSize(%q): err %v, want one line", in, err)
		}
	}
}

func TestParseSizes(t *testing.T) {
	got, err := ParseSizes("8K,64K, 256K")
	if err != nil || len(got) != 3 || got[0] != 8192 || got[1] != 65536 || got[2] != 262144 {
		t.Errorf("ParseSizes = %v, %v", got, err)
	}
	for _, in := range []string{"", ",", "8K,0", "8K,x", "4G"} {
		if _, err := ParseSizes(in); err == nil {
			t.Errorf("ParseSizes(%q) accepted", in)
		}
	}
}

func TestParseInts(t *testing.T) {
	if got, err := ParseInts("1,4"); err != nil || len(got) != 2 || got[1] != 4 {
		t.Errorf("ParseInts = %v, %v", got, err)
	}
	for _, in := range []string{"", "0", "-1", "1,x", "1.5"} {
		if _, err := ParseInts(in); err == nil {
			t.Errorf("ParseInts(%q) accepted", in)
		}
	}
}

func TestParseCPUs(t *testing.T) {
	both := func(workload.Role) bool { return true }
	if s, r, err := ParseCPUs("", both); err != nil || s != -1 || r != -1 {
		t.Errorf(`ParseCPUs("") = %d, %d, %v`, s, r, err)
	}
	if s, r, err := ParseCPUs("0:0", both); err != nil || s != 0 || r != 0 {
		t.Errorf(`ParseCPUs("0:0") = %d, %d, %v`, s, r, err)
	}
	n := runtime.NumCPU()
	for _, in := range []string{"0", "0:", ":1", "a:b", "-1:0", "0:" + itoa(n), itoa(n+100) + ":0", "0:1:2"} {
		if _, _, err := ParseCPUs(in, both); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseCPUs(%q): err %v, want one line", in, err)
		}
	}
	// With the receiver on a peer, its CPU is the peer's to check; the
	// sender's is still this machine's.
	senderHere := func(r workload.Role) bool { return r == workload.RoleSender }
	if s, r, err := ParseCPUs("0:"+itoa(n+100), senderHere); err != nil || s != 0 || r != n+100 {
		t.Errorf("ParseCPUs(0:%d) with the receiver remote = %d, %d, %v", n+100, s, r, err)
	}
	if _, _, err := ParseCPUs(itoa(n)+":0", senderHere); err == nil || !strings.Contains(err.Error(), "sender CPU") {
		t.Errorf("ParseCPUs(%d:0) with the sender here: err %v, want the sender CPU out of range", n, err)
	}
}

func TestParseCI(t *testing.T) {
	ci, err := ParseCI("95,5")
	if err != nil || ci.Level != 0.95 || ci.WidthPct != 5 {
		t.Errorf("ParseCI = %+v, %v", ci, err)
	}
	for _, in := range []string{"95", "95,", "x,5", "100,5", "40,5", "95,0", "95,-1", "95,101"} {
		if _, err := ParseCI(in); err == nil {
			t.Errorf("ParseCI(%q) accepted", in)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
