package testenv

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// NetCounters reads the SNMP and extended TCP counters of this network
// namespace (/proc/net/snmp and /proc/net/netstat), keyed "Tcp.RetransSegs",
// "TcpExt.PruneCalled" and so on. Transfer tests take a delta around a run
// to tell what the kernel did to their sockets, e.g. retransmit (a zero-copy
// skb is copied again on local delivery) or collapse a receive queue under
// memory pressure (TCP_ZEROCOPY_RECEIVE cannot map collapsed data).
func NetCounters(t testing.TB) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	for _, path := range []string{"/proc/net/snmp", "/proc/net/netstat"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		parseNetCounters(string(b), out)
	}
	return out
}

// parseNetCounters reads the "Proto: name name ..." / "Proto: value value
// ..." line pairs of /proc/net/snmp and /proc/net/netstat.
func parseNetCounters(text string, out map[string]uint64) {
	var names []string
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if names == nil || names[0] != f[0] {
			names = f
			continue
		}
		proto := strings.TrimSuffix(f[0], ":")
		for i := 1; i < len(f) && i < len(names); i++ {
			// Tcp MaxConn is -1: signed counters are not deltas anyone wants.
			if v, err := strconv.ParseUint(f[i], 10, 64); err == nil {
				out[proto+"."+names[i]] = v
			}
		}
		names = nil
	}
}

// NetCounterDelta is after minus before for the counters that moved.
func NetCounterDelta(before, after map[string]uint64) map[string]uint64 {
	d := map[string]uint64{}
	for k, v := range after {
		if v > before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}

// NetCountersMoved lists "name=delta" for the TCP counters (Tcp.RetransSegs
// and every TcpExt one) that moved since before, sorted, for a test's log.
func NetCountersMoved(t testing.TB, before map[string]uint64) string {
	t.Helper()
	var moved []string
	for k, v := range NetCounterDelta(before, NetCounters(t)) {
		if strings.HasPrefix(k, "TcpExt.") || k == "Tcp.RetransSegs" {
			moved = append(moved, fmt.Sprintf("%s=%d", k, v))
		}
	}
	slices.Sort(moved)
	return strings.Join(moved, " ")
}
