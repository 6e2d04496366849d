package attrib

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// fixture is a recorded testdata/*.folded file: per "role;path;ctx", the
// sample count of each stack.
type fixture map[string]map[string]uint64

func loadFixture(t *testing.T, name string) fixture {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".folded"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fx := fixture{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			t.Fatalf("bad line %q", line)
		}
		n, err := strconv.ParseUint(line[sp+1:], 10, 64)
		if err != nil {
			t.Fatalf("bad count in %q", line)
		}
		parts := strings.SplitN(line[:sp], ";", 4)
		if len(parts) != 4 {
			t.Fatalf("bad line %q", line)
		}
		key := strings.Join(parts[:3], ";")
		if fx[key] == nil {
			fx[key] = map[string]uint64{}
		}
		fx[key][parts[3]] += n
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return fx
}

// shares classifies the stacks of one "role;path;ctx" (ctx "*" = all).
func (fx fixture) shares(key string) (map[string]uint64, uint64) {
	out := map[string]uint64{}
	var total uint64
	for k, stacks := range fx {
		if !keyMatch(key, k) {
			continue
		}
		for st, n := range stacks {
			out[Classify(st)] += n
			total += n
		}
	}
	return out, total
}

func keyMatch(pattern, key string) bool {
	p, k := strings.Split(pattern, ";"), strings.Split(key, ";")
	for i := range p {
		if p[i] != "*" && p[i] != k[i] {
			return false
		}
	}
	return true
}

func largest(m map[string]uint64) string {
	best, bn := "", uint64(0)
	for c, n := range m {
		if c != Tracing && n > bn || (n == bn && c < best) {
			best, bn = c, n
		}
	}
	return best
}

func describe(m map[string]uint64, total uint64) string {
	var cats []string
	for c := range m {
		cats = append(cats, c)
	}
	sort.Slice(cats, func(i, j int) bool { return m[cats[i]] > m[cats[j]] })
	var b strings.Builder
	for _, c := range cats {
		fmt.Fprintf(&b, " %s=%.1f%%", c, 100*float64(m[c])/float64(total))
	}
	return b.String()
}

func TestFixtureShares(t *testing.T) {
	for _, tc := range []struct {
		fixture, key string
		largest      string             // "" = no check
		atLeast      map[string]float64 // category -> minimum share
		below        map[string]float64 // category -> maximum share
	}{
		// write: the send copy dominates the sender's syscall time.
		{fixture: "write_read", key: "sender;tx.write;task", largest: CopyTx, atLeast: map[string]float64{CopyTx: 0.30}},
		// read: the receive copy dominates the receiver's syscall time.
		{fixture: "write_read", key: "receiver;rx.read;task", largest: CopyRx, atLeast: map[string]float64{CopyRx: 0.30}},
		// sendfile and splice: no send copy at all.
		{fixture: "sendfile_read", key: "sender;tx.sendfile;*", below: map[string]float64{CopyTx: 0.02}, atLeast: map[string]float64{Splice: 0.05}},
		{fixture: "splice_read", key: "sender;tx.splice;*", below: map[string]float64{CopyTx: 0.02}, atLeast: map[string]float64{Splice: 0.05}},
		{fixture: "sendfile_read", key: "receiver;rx.read;task", largest: CopyRx},
		// MSG_ZEROCOPY on loopback: pinned at send time, copied later on
		// local delivery, in NET_RX inside the sender's own syscall.
		{fixture: "msg_zerocopy_read", key: "sender;tx.msg_zerocopy;*", atLeast: map[string]float64{CopyDeferred: 0.10, ZcPin: 0.01}, below: map[string]float64{CopyTx: 0.02}},
		{fixture: "msg_zerocopy_read", key: "sender;tx.msg_zerocopy;softirq.net_rx", largest: CopyDeferred},
		{fixture: "io_uring_zc_read", key: "sender;tx.io_uring;*", atLeast: map[string]float64{CopyDeferred: 0.10, ZcPin: 0.01}, below: map[string]float64{CopyTx: 0.02}},
		// TCP_ZEROCOPY_RECEIVE: page mapping instead of copying.
		{fixture: "msg_zerocopy_zerocopy", key: "receiver;rx.zerocopy;task", largest: ZcPin, below: map[string]float64{CopyRx: 0.10}},
	} {
		fx := loadFixture(t, tc.fixture)
		m, total := fx.shares(tc.key)
		if total < 100 {
			t.Errorf("%s %s: only %d samples", tc.fixture, tc.key, total)
			continue
		}
		t.Logf("%s %s (%d samples):%s", tc.fixture, tc.key, total, describe(m, total))
		if tc.largest != "" {
			if got := largest(m); got != tc.largest {
				t.Errorf("%s %s: largest category %s, want %s:%s", tc.fixture, tc.key, got, tc.largest, describe(m, total))
			}
		}
		for c, min := range tc.atLeast {
			if s := float64(m[c]) / float64(total); s < min {
				t.Errorf("%s %s: %s %.1f%%, want at least %.0f%%", tc.fixture, tc.key, c, 100*s, 100*min)
			}
		}
		for c, max := range tc.below {
			if s := float64(m[c]) / float64(total); s > max {
				t.Errorf("%s %s: %s %.1f%%, want below %.0f%%", tc.fixture, tc.key, c, 100*s, 100*max)
			}
		}
	}
}
