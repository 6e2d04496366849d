package doctor

import (
	"reflect"
	"strings"
	"testing"
)

// Lines as /proc/kallsyms prints them, with kptr_restrict zeroing addresses.
const sampleKallsyms = `ffffffff81baef60 T _copy_from_iter
ffffffff8206d2d0 T tcp_sendmsg_locked
ffffffff8206d900 T tcp_sendmsg
ffffffff8206e000 t tcp_sendmsg_fastopen
ffffffff8206e100 t tcp_sendmsg_locked.cold
0000000000000000 t __skb_splice_bits.isra.0
ffffffff82800000 D tcp_sendmsg_data
0000000000000000 t nf_conntrack_in	[nf_conntrack]
garbage
`

func TestParseKallsyms(t *testing.T) {
	syms, err := parseKallsyms(strings.NewReader(sampleKallsyms))
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
		if syms[name] != want {
			t.Errorf("%s present = %v, want %v", name, syms[name], want)
		}
	}
	got := syms.withPrefix("tcp_sendmsg")
	want := []string{"tcp_sendmsg", "tcp_sendmsg_fastopen", "tcp_sendmsg_locked"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("withPrefix = %v, want %v (no .cold clones)", got, want)
	}
}
