package profiler

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/testenv"
)

func requireBPF(t *testing.T) { testenv.RequireBPF(t) }

// eachAccountingBackend runs f as a subtest, named after the backend, with
// each accounting backend every supported kernel has.
func eachAccountingBackend(t *testing.T, f func(t *testing.T, backend string)) {
	for _, backend := range []string{kernel.TpBTF, kernel.RawTp} {
		t.Run(backend, func(t *testing.T) { f(t, backend) })
	}
}

// profileChild runs the loopback child under Profile and returns the
// document and the child's own counts.
func profileChild(t *testing.T, backend string) (*report.Document, childCounts) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "counts.json")
	t.Setenv(childEnv, out)
	t.Setenv("GODEBUG", "asyncpreemptoff=1") // fewer EINTRs; counted anyway
	var c childCounts
	res := profileSelf(t, ProfileOptions{Threads: true, Backend: backend}, out, &c)
	assertDetached(t, res.Document.Backends.ProgramIDs)
	t.Cleanup(func() {
		if t.Failed() {
			// Keep the evidence.
			f, err := os.CreateTemp("", "zcprof-failed-*.json")
			if err == nil {
				report.WriteJSON(f, res.Document)
				f.Close()
				t.Logf("document saved in %s; child counts %+v", f.Name(), c)
			}
		}
	})
	return res.Document, c
}

func findPath(paths []report.Path, name string) report.Path {
	for _, p := range paths {
		if p.Path == name {
			return p
		}
	}
	return report.Path{Path: name}
}

func childProcess(t *testing.T, d *report.Document, c childCounts) report.Process {
	t.Helper()
	for _, p := range d.Processes {
		for _, th := range p.Threads {
			if th.TID == c.SenderTID {
				return p
			}
		}
	}
	t.Fatalf("no process with the sender thread %d in %+v", c.SenderTID, d.Processes)
	return report.Process{}
}

// childThread is the child's thread tid. Each tid appears once: the spawn
// helper execs from its first thread, so the command's main thread is not
// split at the exec (spawn's init).
func childThread(t *testing.T, p report.Process, tid int) report.Thread {
	t.Helper()
	var found []report.Thread
	for _, th := range p.Threads {
		if th.TID == tid {
			found = append(found, th)
		}
	}
	switch len(found) {
	case 0:
		t.Fatalf("thread %d not in the report", tid)
	case 1:
	default:
		t.Errorf("thread %d appears %d times in the report: %+v", tid, len(found), found)
	}
	return found[len(found)-1]
}

func TestLoopbackExactBytesAndCalls(t *testing.T) {
	requireBPF(t)
	eachAccountingBackend(t, func(t *testing.T, backend string) {
		d, c := profileChild(t, backend)
		if d.Backends.Accounting != backend {
			t.Fatalf("accounting backend %q, want %q", d.Backends.Accounting, backend)
		}
		p := childProcess(t, d, c)

		tx := findPath(p.Paths, "tx.write")
		if tx.Bytes != c.SentBytes || tx.Calls != c.WriteCalls {
			t.Errorf("tx.write: %d bytes in %d calls, child sent %d bytes in %d calls", tx.Bytes, tx.Calls, c.SentBytes, c.WriteCalls)
		}
		rx := findPath(p.Paths, "rx.read")
		if rx.Bytes != c.RecvBytes || rx.Calls != c.ReadCalls {
			t.Errorf("rx.read: %d bytes in %d calls, child received %d bytes in %d calls", rx.Bytes, rx.Calls, c.RecvBytes, c.ReadCalls)
		}
		if c.RecvBytes != c.SentBytes {
			t.Errorf("child received %d of %d bytes", c.RecvBytes, c.SentBytes)
		}
		// The file writes are syscalls of the "other" path, not sends.
		if other := findPath(p.Paths, "other"); other.Calls < c.FileWrites {
			t.Errorf("other: %d calls, want at least the %d file writes", other.Calls, c.FileWrites)
		}

		// Sender and receiver threads: their own paths only.
		snd := childThread(t, p, c.SenderTID)
		if got := findPath(snd.Paths, "tx.write"); got.Bytes != c.SentBytes {
			t.Errorf("sender thread tx.write %d bytes, want %d", got.Bytes, c.SentBytes)
		}
		rcv := childThread(t, p, c.ReceiverTID)
		if got := findPath(rcv.Paths, "rx.read"); got.Bytes != c.RecvBytes {
			t.Errorf("receiver thread rx.read %d bytes, want %d", got.Bytes, c.RecvBytes)
		}
		if got := findPath(rcv.Paths, "tx.write"); got.Calls != 0 {
			t.Errorf("receiver thread has %d tx.write calls", got.Calls)
		}

		// On loopback the receive processing runs in the sender's
		// context, inside its write() (loopback runs receive processing in the
		// sender's softirq).
		if snd.CPU.SoftirqNetRxNS == 0 || findPath(snd.Paths, "tx.write").Softirq["softirq.net_rx"] == 0 {
			t.Errorf("no NET_RX softirq in the sender's tx.write: %+v", snd.CPU)
		}
		assertPrecision(t, d, p)
	})
}

// assertPrecision: every thread's parts add up to its schedstat delta
// within 1% or 2 ms (the child runs well over a second).
func assertPrecision(t *testing.T, d *report.Document, p report.Process) {
	t.Helper()
	if d.Precision != nil {
		t.Logf("self-check: %+v", *d.Precision)
	}
	if d.Precision == nil || d.Precision.Checked < 2 || d.Precision.Failed != 0 && !testenv.InVM() {
		t.Errorf("self-check: %+v, warnings %v", d.Precision, d.Warnings)
	} else if d.Precision.Failed != 0 {
		t.Logf("self-check flagged %d threads (not held to it under emulation): %q", d.Precision.Failed, d.Warnings)
	}
	for _, th := range p.Threads {
		c := th.CPU
		if c.UserNS+c.KernelNS+c.SoftirqNS+c.HardirqNS != c.OnCPUNS {
			t.Errorf("thread %d: parts do not add up: %+v", th.TID, c)
		}
		if c.SchedstatNS == 0 || !testenv.PrecisionChecked(c.SchedstatNS) {
			continue // a thread the kernel never ran, or too short under emulation
		}
		// Compared as the kernel counts: schedstat draws some switches
		// earlier than they happen (SchedstatBoundaryNS, reported), and
		// bills zcprof's handlers (ProbeNS) too.
		diff, bound := SchedstatResidual(c)
		t.Logf("thread %d (%s): on-CPU %d ns vs schedstat %d ns: off by %d ns, bound %d ns (+%d under emulation); %+d boundary, %d probe, %d switch-uncertain, %d unresolved",
			th.TID, th.Comm, c.OnCPUNS, c.SchedstatNS, diff, bound, testenv.PrecisionSlack(c.SchedstatNS), c.SchedstatBoundaryNS, c.ProbeNS, c.SwitchUncertainNS, c.UnresolvedNS)
		if diff > bound+testenv.PrecisionSlack(c.SchedstatNS) {
			t.Errorf("thread %d (%s): on-CPU %d ns (%+d boundary, %d probe, %d switch-uncertain, %d unresolved) vs schedstat %d ns: off by %d ns",
				th.TID, th.Comm, c.OnCPUNS, c.SchedstatBoundaryNS, c.ProbeNS, c.SwitchUncertainNS, c.UnresolvedNS, c.SchedstatNS, diff)
		}
	}
}

// assertDetached checks that none of the programs a session attached is
// still loaded (their ids are not reused soon: the kernel cycles ids).
func assertDetached(t *testing.T, ids []uint32) {
	t.Helper()
	if len(ids) < 10 {
		t.Fatalf("session reported %d program ids, want the 10+ it attached", len(ids))
	}
	for _, id := range ids {
		p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
		if err == nil {
			info, _ := p.Info()
			p.Close()
			t.Errorf("program %d (%v) still loaded after the session closed", id, info.Name)
		} else if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("program %d: %v", id, err)
		}
	}
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}
