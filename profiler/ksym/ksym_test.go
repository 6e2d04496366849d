package ksym

import (
	"reflect"
	"strings"
	"testing"
)

// Lines as /proc/kallsyms prints them.
const sample = `ffffffff81baef60 T _copy_from_iter
ffffffff8206d2d0 T tcp_sendmsg_locked
ffffffff8206d900 T tcp_sendmsg
ffffffff8206e000 t tcp_sendmsg_fastopen
ffffffff8206e100 t tcp_sendmsg_locked.cold
ffffffff81f00000 T __pi_memcpy
ffffffff81f00000 T memcpy
ffffffff81f00000 T __memcpy
ffffffff82800000 D tcp_sendmsg_data
ffffffffc0a01000 t nf_conntrack_in	[nf_conntrack]
garbage
`

func TestNames(t *testing.T) {
	tab, err := Parse(strings.NewReader(sample + "0000000000000000 t __skb_splice_bits.isra.0\n"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"_copy_from_iter":          true,
		"tcp_sendmsg_locked":       true,
		"__skb_splice_bits.isra.0": true, // clones are attached by exact name
		"nf_conntrack_in":          true, // module symbol
		"tcp_sendmsg_data":         false,
		"copy_from_iter":           false, // inlined on 6.18
	} {
		if tab.Names[name] != want {
			t.Errorf("%s present = %v, want %v", name, tab.Names[name], want)
		}
	}
	got := tab.Names.WithPrefix("tcp_sendmsg")
	want := []string{"tcp_sendmsg", "tcp_sendmsg_fastopen", "tcp_sendmsg_locked"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WithPrefix = %v, want %v (no .cold clones)", got, want)
	}
}

func TestLookup(t *testing.T) {
	tab, err := Parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Addressable(); err != nil {
		t.Fatal(err)
	}
	for addr, want := range map[uint64]string{
		0xffffffff8206d2d0: "tcp_sendmsg_locked",
		0xffffffff8206d2d5: "tcp_sendmsg_locked",
		0xffffffff8206d8ff: "tcp_sendmsg_locked",
		0xffffffff8206e101: "tcp_sendmsg_locked.cold",
		0xffffffff81f00010: "memcpy", // three aliases, one stable name
		0xffffffffc0a01010: "nf_conntrack_in [nf_conntrack]",
		0xffffffff81000000: "0xffffffff81000000", // before the first symbol
		0xffffffffc0f00000: "0xffffffffc0f00000", // far past the last one
	} {
		if got := tab.Name(addr); got != want {
			t.Errorf("Name(%#x) = %q, want %q", addr, got, want)
		}
	}
	if _, off, _ := tab.Lookup(0xffffffff8206d2d5); off != 5 {
		t.Errorf("offset %d, want 5", off)
	}
}

func TestHiddenAddresses(t *testing.T) {
	hidden := "0000000000000000 T _copy_from_iter\n0000000000000000 T tcp_sendmsg\n"
	tab, err := Parse(strings.NewReader(hidden))
	if err != nil {
		t.Fatal(err)
	}
	err = tab.Addressable()
	if err == nil || !strings.Contains(err.Error(), "kptr_restrict") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("want a one-line kptr_restrict error, got %v", err)
	}
	if !tab.Names["tcp_sendmsg"] {
		t.Error("names must still be read when addresses are hidden")
	}
	if _, err := Parse(strings.NewReader("")); err != nil {
		t.Fatal(err)
	}
	empty, _ := Parse(strings.NewReader(""))
	if empty.Addressable() == nil {
		t.Error("an empty kallsyms must not be addressable")
	}
}

func TestReadLive(t *testing.T) {
	tab, err := Read()
	if err != nil {
		t.Skip(err)
	}
	if !tab.Names["tcp_sendmsg"] {
		t.Error("tcp_sendmsg missing from /proc/kallsyms")
	}
	if tab.Addressable() != nil {
		return // non-root with kptr_restrict: names only
	}
	for _, fn := range []string{"tcp_sendmsg", "_copy_from_iter", "skb_copy_ubufs"} {
		if !tab.Names[fn] {
			continue
		}
		found := false
		for _, s := range tab.syms {
			if s.Name == fn {
				found = tab.Name(s.Addr+1) == fn
			}
		}
		if !found {
			t.Errorf("%s does not symbolize to itself", fn)
		}
	}
}

func TestAddrs(t *testing.T) {
	in := sample + "ffffffff83000000 B ptype_all\n" +
		"0000000000000000 D net_hotdata\n" +
		"ffffffffc0a02000 t copy_splice_read\t[some_module]\n"
	got := addrsFrom(strings.NewReader(in), map[string]string{
		"tcp_sendmsg":      "Tt",
		"tcp_sendmsg_data": "Tt", // a data symbol where text is wanted
		"ptype_all":        "DdBb",
		"net_hotdata":      "DdBb", // hidden by kptr_restrict
		"copy_splice_read": "Tt",   // only in a module
		"absent":           "Tt",
	})
	want := map[string]uint64{"tcp_sendmsg": 0xffffffff8206d900, "ptype_all": 0xffffffff83000000}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("addrsFrom = %x, want %x", got, want)
	}
}
