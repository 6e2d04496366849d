package profiler

import (
	"os"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/taxonomy"
	"github.com/zcprof/zcprof/profiler/testenv"
)

// TestExitsAttachBeforeEntries: a softirq (or hardirq, or syscall) entered
// between the attachment of its entry and its exit program never exits for
// the accounting, and its CPU's time is billed to it until the next
// switch. The window itself is one attach syscall wide (microseconds) and
// cannot be hit on purpose, so the order is what is checked.
func TestExitsAttachBeforeEntries(t *testing.T) {
	pairs := map[string]string{
		"sys_enter":         "sys_exit",
		"softirq_entry":     "softirq_exit",
		"irq_handler_entry": "irq_handler_exit",
	}
	at := map[string]int{}
	for i, p := range corePoints {
		at[p.tracepoint] = i
	}
	for entry, exit := range pairs {
		e, ok1 := at[entry]
		x, ok2 := at[exit]
		if !ok1 || !ok2 {
			t.Fatalf("corePoints lack %s or %s", entry, exit)
		}
		if x > e {
			t.Errorf("%s is attached before %s", entry, exit)
		}
	}
}

// TestNoUringSendsLeavesSendLength: a session whose targets make no
// io_uring sends attaches no sock_send_length program of its own (it runs
// on every send of the host) and does not report it missing; by default
// it is attached, or reported missing on a kernel without the tracepoint
// (before 6.3). Its byte classes infer each send's class from the
// syscall, and leave out tcp_sendmsg_locked, which fires for every skb a
// send builds; by default they take that tracepoint's decisions where the
// kernel has it (6.16+).
func TestNoUringSendsLeavesSendLength(t *testing.T) {
	requireBPF(t)
	absent := testenv.Expected("TRACEPOINTS_MISSING", "sock_send_length")
	noDecision := testenv.Expected("TRACEPOINTS_MISSING", "tcp_sendmsg_locked")
	for _, noUring := range []bool{false, true} {
		sess, err := Open(Options{Target: Target{PIDs: []int{os.Getpid()}}, NoUringSends: noUring})
		if err != nil {
			t.Fatal(err)
		}
		want := programName(sess.Backend(), "sock_send_length")
		attached := false
		for _, p := range sess.progs.progs {
			info, err := p.Info()
			if err != nil {
				sess.Close()
				t.Fatal(err)
			}
			attached = attached || info.Name == want
		}
		_, missing := sess.Unavailable()[optionalPoints[0].optional]
		mode := sess.ByteClasses()
		sess.Close()
		wantMode := byteclass.Decision
		switch {
		case absent:
			wantMode = byteclass.SyscallReturn
		case noUring || noDecision:
			wantMode = byteclass.Syscall
		}
		if mode != wantMode {
			t.Errorf("NoUringSends %v (sock_send_length absent: %v, tcp_sendmsg_locked absent: %v): byte classes %q, want %q", noUring, absent, noDecision, mode, wantMode)
		}
		wantAttached := !noUring && !absent
		if attached != wantAttached || missing != (!noUring && absent) {
			t.Errorf("NoUringSends %v (tracepoint absent: %v): %s attached %v, reported unavailable %v", noUring, absent, want, attached, missing)
		}
	}
}

// TestCopyInferenceLeavesHooks: no session traces receive copies (a
// probe on skb_copy_datagram_iovec ran for every skb a read copied): the
// accounting's sys_exit counts them from each receive call. One whose
// targets send only by plain writes hooks no send (sock_send_length, a run
// per send call; before 6.3 the send syscalls' entries and exits) and
// counts tx.write's bytes as copies. By default sends are traced.
func TestCopyInferenceLeavesHooks(t *testing.T) {
	requireBPF(t)
	absent := testenv.Expected("TRACEPOINTS_MISSING", "sock_send_length")
	for _, writesCopy := range []bool{false, true} {
		sess, err := Open(Options{Target: Target{PIDs: []int{os.Getpid()}}, TxWritesCopy: writesCopy, NoUringSends: true})
		if err != nil {
			t.Fatal(err)
		}
		if sess.bytes == nil {
			sess.Close()
			t.Fatalf("byte classes not loaded: %v", sess.Unavailable())
		}
		attached := map[string]bool{}
		sendHooks, rxHooks := 0, 0
		for _, p := range sess.bytes.Programs() {
			info, err := p.Info()
			if err != nil {
				sess.Close()
				t.Fatal(err)
			}
			attached[info.Name] = true
			if info.Name == "zcb_sock_send_length" || strings.HasPrefix(info.Name, "zcb_se_") || strings.HasPrefix(info.Name, "zcb_sx_") {
				sendHooks++
			}
			if strings.HasPrefix(info.Name, "zcb_rx") {
				rxHooks++
			}
		}
		inferred := map[byteclass.PathClass]bool{}
		for _, pc := range sess.bytes.Inferred() {
			inferred[pc] = true
		}
		mode := sess.ByteClasses()
		sess.Close()
		tx := byteclass.PathClass{Path: taxonomy.PathTxWrite, Class: byteclass.ClassTxCopyWrite}
		// Without sock_send_length (before 6.3) sends are hooked at the
		// syscalls, and classed from their returns.
		wantMode := byteclass.Syscall
		if absent && !writesCopy {
			wantMode = byteclass.SyscallReturn
		}
		if rxHooks > 0 || (sendHooks > 0) == writesCopy || inferred[tx] != writesCopy || len(inferred) != btoi(writesCopy) || mode != wantMode {
			t.Errorf("TxWritesCopy %v (sock_send_length absent: %v): mode %q, want %q; programs %v, inferred %v", writesCopy, absent, mode, wantMode, attached, inferred)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
