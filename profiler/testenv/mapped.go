package testenv

import "testing"

// MinMappedShare is the share of received bytes a TCP_ZEROCOPY_RECEIVE
// receiver behind a MSG_ZEROCOPY or SEND_ZC sender maps on loopback, natively
// and under emulation alike: every segment is one whole page (MSS 4096), and
// only the sub-page segments the sender cuts at the edge of the receive
// window are copied (2-5% here).
const MinMappedShare = 0.9

// CheckMappedShare asserts that mapped is at least MinMappedShare of total,
// unless the kernel collapsed a receive queue during the transfer (netBefore:
// NetCounters before it; TcpExt.TCPRcvCollapsed moved). A receiver that
// falls a full buffer behind (tcp_rmem[2]) makes TCP prune the queue, and
// tcp_collapse copies everything from the partly read head skb to the end
// of the queue into linear skbs of under a page (3,776 bytes): none of it can
// be mapped. In the 6.12 guest one transfer in 16-30 mapped 31-66% that
// way (TcpExt.TCPRcvCollapsed=104 in the 31% one). The
// collapse is the kernel's copy, not the receiver's choice, so the share is
// then logged with the count instead of asserted.
func CheckMappedShare(t testing.TB, mapped, total uint64, netBefore map[string]uint64) {
	t.Helper()
	share := float64(mapped) / float64(total)
	if share >= MinMappedShare {
		t.Logf("mapped %d of %d bytes (%.1f%%)", mapped, total, 100*share)
		return
	}
	if n := NetCounterDelta(netBefore, NetCounters(t))["TcpExt.TCPRcvCollapsed"]; n > 0 {
		t.Logf("mapped %d of %d bytes (%.1f%%), share not asserted: the kernel collapsed %d receive-queue skbs into linear ones (%s)",
			mapped, total, 100*share, n, NetCountersMoved(t, netBefore))
		return
	}
	t.Errorf("mapped %d of %d bytes (%.1f%%), want at least %.0f%% (%s)", mapped, total, 100*share, 100*MinMappedShare,
		NetCountersMoved(t, netBefore))
}
