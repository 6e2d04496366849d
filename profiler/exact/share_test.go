package exact

import (
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/attrib"
)

// A stand-in for the sampling backend's rule table: the copy leaf of
// the copy signature is copy.tx, anything else tcp.tx.
func classifyStub(stack string) string {
	if strings.Contains(stack, "_copy_from_iter") || strings.HasSuffix(stack, "rep_movs_alternative") {
		return attrib.CopyTx
	}
	return attrib.TCPTx
}

const sendPrefix = "entry_SYSCALL_64;do_syscall_64;__x64_sys_write;ksys_write;vfs_write;sock_write_iter;tcp_sendmsg;tcp_sendmsg_locked"

func TestCopyShares(t *testing.T) {
	stacks := map[string]uint64{
		sendPrefix + ";_copy_from_iter":                                   70,
		sendPrefix + ";_copy_from_iter;rep_movs_alternative":              5,
		sendPrefix + ";tcp_push;__tcp_push_pending_frames;tcp_write_xmit": 20,
		// Inside a traced callee: measured apart, not part of the share.
		sendPrefix + ";skb_zerocopy_iter_stream;zerocopy_fill_skb_from_iter": 30,
		// Not inside tcp_sendmsg_locked at all.
		"entry_SYSCALL_64;do_syscall_64;__x64_sys_read;ksys_read": 50,
		// A compiler clone of the caller counts as the caller.
		"entry_SYSCALL_64;tcp_sendmsg_locked.cold;_copy_from_iter": 5,
	}
	got := CopyShares(stacks, attachedExcept(FuncCopyFromIter), classifyStub)
	if s := got[FuncTCPSendmsgLocked]; s != (Share{Copy: 80, Total: 100}) {
		t.Errorf("share %+v, want 80/100", s)
	}

	// Nothing attached but the caller: the zerocopy stacks count too.
	got = CopyShares(stacks, func(id uint8) bool { return id == FuncTCPSendmsgLocked }, classifyStub)
	if s := got[FuncTCPSendmsgLocked]; s != (Share{Copy: 80, Total: 130}) {
		t.Errorf("share without traced callees %+v, want 80/130", s)
	}

	// _copy_from_iter traced: no share is needed or computed.
	if got := CopyShares(stacks, attachedExcept(), classifyStub); len(got) != 0 {
		t.Errorf("shares with the copy routine traced: %+v", got)
	}
}

func TestFrameIs(t *testing.T) {
	for frame, want := range map[string]bool{
		"tcp_sendmsg_locked":       true,
		"tcp_sendmsg_locked.cold":  true,
		"tcp_sendmsg_locked [mod]": true,
		"tcp_sendmsg_locked_extra": false,
		"tcp_sendmsg":              false,
		"0xffffffff81000000":       false,
	} {
		if frameIs(frame, "tcp_sendmsg_locked") != want {
			t.Errorf("frameIs(%q) != %v", frame, want)
		}
	}
}
