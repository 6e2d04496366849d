package profiler

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/testenv"
	"github.com/zcprof/zcprof/workload"
)

// transferEntries runs one workload transfer under a session on exactly
// its threads and returns each side's report entry. mode "" is auto.
func transferEntries(t *testing.T, cfg workload.Config, mode string) (snd, rcv report.Process, res workload.Result, d *report.Document) {
	t.Helper()
	skipWithoutTracepoint(t, mode)
	tr, err := workload.Prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	role := map[int]workload.Role{}
	var tids []int
	for _, th := range tr.Threads() {
		role[th.TID] = th.Role
		tids = append(tids, th.TID)
	}
	sess, err := Open(Options{Target: Target{TIDs: tids}, ByteClasses: mode})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if got := sess.ByteClasses(); got == "" || (mode != "" && got != mode) {
		t.Fatalf("byte classes backend %q, want %q (unavailable: %v)", got, mode, sess.Unavailable())
	}
	start, err := sess.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	res, err = tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	end, err := sess.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	iv := Delta(start, end)
	sides := map[workload.Role][]ThreadDelta{}
	for _, td := range iv.Threads {
		if r, ok := role[td.Info.TID]; ok {
			sides[r] = append(sides[r], td)
		}
	}
	snd = ProcessEntry(os.Getpid(), sides[workload.RoleSender], false)
	rcv = ProcessEntry(os.Getpid(), sides[workload.RoleReceiver], false)
	d = sess.NewDocument("run", iv, snd.CPU, rcv.CPU)
	if iv.ByteClassDrops != 0 {
		t.Errorf("%d byte-class updates dropped", iv.ByteClassDrops)
	}
	assertByteClassesLoaded(t, d, mode)
	return snd, rcv, res, d
}

// assertByteClassesLoaded: every byte-class program this kernel can take
// was attached (a forced fallback only drops what it replaces), and no
// byte-class warning was given.
func assertByteClassesLoaded(t *testing.T, d *report.Document, mode string) {
	t.Helper()
	for k, v := range d.Backends.Unavailable {
		if strings.HasPrefix(k, "byte classes") && k != "byte classes: "+byteclass.Decision && k != "byte classes: sock_send_length" {
			t.Errorf("unavailable %s: %s", k, v)
		}
	}
	for _, w := range d.Warnings {
		if strings.Contains(w, "byte-class") {
			t.Errorf("warning: %s", w)
		}
	}
}

// byteClassModes: every send-decision backend runs here, forced (auto picks
// tcp_sendmsg_locked on 6.16+, syscall on 6.3-6.15, syscall_return before).
func byteClassModes() []string {
	return []string{byteclass.Decision, byteclass.Syscall, byteclass.SyscallReturn}
}

// modeTracepoint is the tracepoint a forced backend needs.
var modeTracepoint = map[string]string{
	byteclass.Decision: "tcp_sendmsg_locked", // 6.16+
	byteclass.Syscall:  "sock_send_length",   // 6.3+
}

// skipWithoutTracepoint skips a backend this kernel cannot have (said why).
func skipWithoutTracepoint(t *testing.T, mode string) {
	t.Helper()
	tp := modeTracepoint[mode]
	if tp == "" {
		return
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := spec.AnyTypeByName("btf_trace_" + tp); err != nil {
		t.Skipf("backend %s needs the %s tracepoint, which this kernel does not have", mode, tp)
	}
}

// preferredMode is the byte-class backend auto takes on this kernel.
func preferredMode(t *testing.T) string {
	t.Helper()
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range byteClassModes() {
		if tp := modeTracepoint[mode]; tp == "" {
			return mode
		} else if _, err := spec.AnyTypeByName("btf_trace_" + tp); err == nil {
			return mode
		}
	}
	return byteclass.SyscallReturn
}

// uringUnclassified: without sock_send_length no byte count exists for an
// io_uring send (the syscall returns SQEs), so it is left out, knowingly.
func uringUnclassified(t *testing.T, mode, method string, zc *report.Zerocopy) bool {
	t.Helper()
	if mode != byteclass.SyscallReturn || (method != workload.MethodIOUringZC && method != workload.MethodIOUring) {
		return false
	}
	if zc.TxBytes != 0 || zc.TxPinnedBytes != 0 {
		t.Errorf("%s in %s mode: %+v", method, mode, zc)
	}
	return true
}

// Byte classes and verdicts with each send-decision backend: exact byte
// classes against what the generator itself counted. It runs as on a fresh
// machine (no tracefs, debugfs or securityfs), whatever this one has
// mounted: zcprof mounts tracefs itself, and every class must still hold.
func TestByteClassesVerdicts(t *testing.T) {
	if !testenv.InFreshMounts(t) {
		return
	}
	total := int64(testenv.Pick(32<<20, 8<<20))
	for _, mode := range byteClassModes() {
		t.Run(mode, func(t *testing.T) {
			// Copying sends: write, send, writev (one iovec per page of
			// the pattern) and io_uring SEND.
			for _, m := range []string{workload.MethodWrite, workload.MethodSend, workload.MethodWritev, workload.MethodIOUring} {
				t.Run(m, func(t *testing.T) {
					snd, rcv, res, _ := transferEntries(t, workload.Config{Method: m, Size: 64 << 10, Bytes: total}, mode)
					sent := uint64(res.SentBytes())
					zc := snd.Zerocopy
					if uringUnclassified(t, mode, m, zc) {
						return
					}
					if zc.Source != report.ZerocopySourceKernel || zc.TxBytes != sent || zc.TxCopiedBytes != sent {
						t.Errorf("%s: %+v, sent %d", m, zc, sent)
					}
					if !strings.HasPrefix(zc.Verdict, "copy") {
						t.Errorf("%s verdict %q", m, zc.Verdict)
					}
					// Every received byte was copied to user memory.
					if r := rcv.Zerocopy; r.RxCopiedBytes != uint64(res.ReceivedBytes()) || r.RxMappedBytes != 0 || r.TxBytes != 0 {
						t.Errorf("read receiver: %+v, received %d", r, res.ReceivedBytes())
					}
					assertTxMatchesPaths(t, snd)
				})
			}
			for _, m := range []string{workload.MethodSendfile, workload.MethodSplice, workload.MethodVmsplice} {
				t.Run(m, func(t *testing.T) {
					snd, _, res, _ := transferEntries(t, workload.Config{Method: m, Size: 64 << 10, Bytes: total}, mode)
					sent := uint64(res.SentBytes())
					zc := snd.Zerocopy
					if zc.TxBytes != sent || zc.TxCopiedBytes != 0 || zc.TxSplicedBytes != sent || zc.TxDeferredCopyBytes != 0 {
						t.Errorf("%s: %+v, sent %d", m, zc, sent)
					}
					splicer := "splice" // vmsplice fills a pipe that splice sends
					if m == workload.MethodSendfile {
						splicer = "sendfile"
					}
					if want := fmt.Sprintf("%s: zero-copy taken for %.1f MiB (100%%)", splicer, float64(sent)/(1<<20)); zc.Verdict != want {
						t.Errorf("%s verdict %q", m, zc.Verdict)
					}
				})
			}
			for _, m := range []string{workload.MethodMsgZerocopy, workload.MethodIOUringZC} {
				t.Run(m, func(t *testing.T) {
					snd, _, res, _ := transferEntries(t, workload.Config{Method: m, Size: 64 << 10, Bytes: total}, mode)
					sent := uint64(res.SentBytes())
					zc := snd.Zerocopy
					if uringUnclassified(t, mode, m, zc) {
						return
					}
					if zc.TxBytes != sent || zc.TxPinnedBytes != sent || zc.TxCopiedBytes != 0 {
						t.Errorf("%s: %+v, sent %d", m, zc, sent)
					}
					// Every pinned byte reached a local socket and was
					// copied there; retransmitted skbs were copied again.
					if zc.TxDeferredCopyBytes != sent || zc.TxDeferredVia["loopback"] != sent+zc.TxDeferredRecopyBytes {
						t.Errorf("%s: deferred %d (%v, recopy %d), sent %d", m, zc.TxDeferredCopyBytes, zc.TxDeferredVia, zc.TxDeferredRecopyBytes, sent)
					}
					if !strings.Contains(zc.Verdict, fmt.Sprintf("zero-copy requested but %.1f MiB copied on local delivery (loopback)", float64(sent)/(1<<20))) {
						t.Errorf("%s verdict %q", m, zc.Verdict)
					}
					// The kernel's own completions say COPIED too.
					w := res.Total()
					if zc.ZCCompletions == 0 || zc.ZCCompletionsCopied != zc.ZCCompletions || zc.ZCCompletions != uint64(w.ZCCompletions) {
						t.Errorf("%s: completions %d copied %d, workload saw %d copied %d", m, zc.ZCCompletions, zc.ZCCompletionsCopied, w.ZCCompletions, w.ZCCopied)
					}
				})
			}
			t.Run("msg_zerocopy without SO_ZEROCOPY", func(t *testing.T) {
				snd, _, res, _ := transferEntries(t, workload.Config{Method: workload.MethodMsgZerocopy, NoSockZerocopy: true, Size: 64 << 10, Bytes: total}, mode)
				sent := uint64(res.SentBytes())
				zc := snd.Zerocopy
				if zc.TxCopiedBytes != sent || zc.TxCopiedZCIgnoredBytes != sent || zc.TxPinnedBytes != 0 || zc.TxDeferredCopyBytes != 0 || zc.ZCCompletions != 0 {
					t.Errorf("no SO_ZEROCOPY: %+v, sent %d", zc, sent)
				}
				if !strings.Contains(zc.Verdict, "ignored") {
					t.Errorf("verdict %q", zc.Verdict)
				}
			})
			t.Run("zerocopy receive", func(t *testing.T) {
				net0 := testenv.NetCounters(t)
				_, rcv, res, _ := transferEntries(t, workload.Config{Method: workload.MethodMsgZerocopy, RxMethod: workload.RxZerocopy, Size: 256 << 10, Bytes: total}, mode)
				got := uint64(res.ReceivedBytes())
				zc := rcv.Zerocopy
				w := res.Total()
				// Exact against the receiver's own counts, and mostly mapped.
				if zc.RxMappedBytes != uint64(w.RxMappedBytes) || zc.RxCopiedBytes+zc.RxMappedBytes != got {
					t.Errorf("rx: %+v; workload mapped %d copied %d of %d", zc, w.RxMappedBytes, w.RxCopiedBytes, got)
				}
				testenv.CheckMappedShare(t, zc.RxMappedBytes, got, net0)
				if !strings.Contains(zc.Verdict, "mapped") {
					t.Errorf("verdict %q", zc.Verdict)
				}
			})
		})
	}
}

// assertTxMatchesPaths: the classified send bytes equal the bytes the
// sending syscalls returned (tx.write and tx.io_uring: one socket per call).
func assertTxMatchesPaths(t *testing.T, p report.Process) {
	t.Helper()
	var sum uint64
	for _, path := range p.Paths {
		if path.Path == "tx.write" || path.Path == "tx.io_uring" {
			sum += path.Bytes
			if path.Zerocopy == nil || path.Zerocopy.TxBytes != path.Bytes {
				t.Errorf("path %s: %d bytes, zerocopy %+v", path.Path, path.Bytes, path.Zerocopy)
			}
		}
	}
	if sum != p.Zerocopy.TxBytes {
		t.Errorf("classified %d bytes, syscalls returned %d", p.Zerocopy.TxBytes, sum)
	}
}

// TestNoPinnedSendsLeavesDeferredHooks: a session whose targets make no
// pinned sends attaches no deferred-copy program (every skb of the host
// passes their hooks) and does not report them missing; by default both
// are attached.
func TestNoPinnedSendsLeavesDeferredHooks(t *testing.T) {
	requireBPF(t)
	deferred := []string{"zcb_netif_receive_skb", "zcb_net_dev_start_xmit"}
	for _, noPinned := range []bool{false, true} {
		sess, err := Open(Options{Target: Target{PIDs: []int{os.Getpid()}}, NoPinnedSends: noPinned})
		if err != nil {
			t.Fatal(err)
		}
		if sess.bytes == nil {
			sess.Close()
			t.Fatalf("no byte classes: %v", sess.Unavailable())
		}
		attached := map[string]bool{}
		for _, p := range sess.bytes.Programs() {
			info, err := p.Info()
			if err != nil {
				t.Fatal(err)
			}
			attached[info.Name] = true
		}
		for _, name := range deferred {
			if got := attached[name]; got == noPinned {
				t.Errorf("NoPinnedSends %v: %s attached: %v (programs %v)", noPinned, name, got, attached)
			}
		}
		for k := range sess.Unavailable() {
			if strings.Contains(k, "deferred copies") {
				t.Errorf("NoPinnedSends %v: %q reported unavailable", noPinned, k)
			}
		}
		sess.Close()
	}
}
