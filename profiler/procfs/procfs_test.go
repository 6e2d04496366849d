package procfs

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	b, err := os.ReadFile("testdata/stat_weird")
	if err != nil {
		t.Fatal(err)
	}
	st, err := ParseStat(string(b))
	if err != nil {
		t.Fatal(err)
	}
	// utime 250 and stime 75 ticks at USER_HZ=100.
	if st.Comm != "my (weird) comm" || st.State != 'S' || st.PPid != 1 ||
		st.UtimeNS != 2_500_000_000 || st.StimeNS != 750_000_000 {
		t.Fatalf("got %+v", st)
	}
}

func TestParseStatErrors(t *testing.T) {
	for _, in := range []string{"", "12 no parens", "1 (x) S 1 2", "1 (x) S a 1 1 0 -1 0 0 0 0 0 x 1"} {
		if _, err := ParseStat(in); err == nil {
			t.Errorf("ParseStat(%q): no error", in)
		}
	}
}

func TestParseSchedstat(t *testing.T) {
	ns, err := ParseSchedstat("1181776363 2000 35\n")
	if err != nil || ns != 1181776363 {
		t.Fatalf("got %d, %v", ns, err)
	}
	if _, err := ParseSchedstat(""); err == nil {
		t.Fatal("empty: no error")
	}
}

func TestFixtureTree(t *testing.T) {
	old := Root
	Root = t.TempDir()
	defer func() { Root = old }()
	for _, d := range []string{"/42/task/42", "/42/task/43", "/7/task/7"} {
		if err := os.MkdirAll(Root+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(Root+"/42/task/43/schedstat", []byte("555 1 2\n"), 0o644)
	os.WriteFile(Root+"/42/comm", []byte("nginx\n"), 0o644)
	os.WriteFile(Root+"/43", nil, 0o644) // not a directory, still a number: /proc has none, harmless
	os.WriteFile(Root+"/self", nil, 0o644)
	os.MkdirAll(Root+"/43dir/x", 0o755)
	os.WriteFile(Root+"/42/status", []byte("Name:\tnginx\nTgid:\t42\nPid:\t43\n"), 0o644)

	tids, err := Threads(42)
	if err != nil || len(tids) != 2 || tids[0] != 42 || tids[1] != 43 {
		t.Fatalf("Threads(42) = %v, %v", tids, err)
	}
	if rt, err := ThreadRuntime(42, 43); err != nil || rt != 555 {
		t.Fatalf("ThreadRuntime = %d, %v", rt, err)
	}
	if c, err := Comm(42); err != nil || c != "nginx" {
		t.Fatalf("Comm = %q, %v", c, err)
	}
	if g, err := Tgid(42); err != nil || g != 42 {
		t.Fatalf("Tgid = %d, %v", g, err)
	}
	if _, err := Threads(99); err == nil {
		t.Fatal("Threads(99): no error for a missing process")
	}
}

func TestParseSteal(t *testing.T) {
	stat := "cpu  18553 0 9586 62460 505 0 529 17 0 0\ncpu0 8761 0 4501 32208 71 0 264 7 0 0\n"
	if got := parseStealNS(stat); got != 170_000_000 {
		t.Fatalf("steal %d", got)
	}
	if got := parseStealNS("cpu 1 2 3\n"); got != 0 {
		t.Fatalf("short line: %d", got)
	}
}
