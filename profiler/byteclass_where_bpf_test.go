package profiler

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/testenv"
	"github.com/zcprof/zcprof/workload"
)

// Where the kernel copies after all: the device of the deferred copy (veth,
// a packet tap) and sources that cannot splice.

func TestDeferredCopyOverVeth(t *testing.T) {
	// As on a fresh machine: no tracefs until zcprof mounts it.
	if !testenv.InFreshMounts(t) {
		return
	}
	for _, m := range []string{workload.MethodMsgZerocopy, workload.MethodIOUringZC} {
		t.Run(m, func(t *testing.T) {
			snd, rcv, res, d := transferEntries(t, workload.Config{Method: m, Topology: workload.TopoNetns, Size: 64 << 10, Bytes: int64(testenv.Pick(16<<20, 4<<20))}, "")
			sent := uint64(res.SentBytes())
			zc := snd.Zerocopy
			if uringUnclassified(t, d.Backends.ByteClasses, m, zc) {
				return
			}
			if zc.TxPinnedBytes != sent || zc.TxDeferredCopyBytes != sent || zc.TxDeferredVia["veth"] != sent+zc.TxDeferredRecopyBytes {
				t.Errorf("veth: %+v, sent %d", zc, sent)
			}
			if !strings.Contains(zc.Verdict, "copied on local delivery (veth)") {
				t.Errorf("verdict %q", zc.Verdict)
			}
			// The receiver's namespace delivered them: its own entry has
			// no sends, only the bytes it copied.
			if r := rcv.Zerocopy; r.TxBytes != 0 || r.RxCopiedBytes != uint64(res.ReceivedBytes()) {
				t.Errorf("receiver: %+v", r)
			}
		})
	}
}

// A packet socket on lo (dev->ptype_all), or on every device of the
// namespace (unbound: the namespace's, or on older kernels the global,
// ptype_all).
func TestDeferredCopyForPacketTap(t *testing.T) {
	// As on a fresh machine: no tracefs until zcprof mounts it.
	if !testenv.InFreshMounts(t) {
		return
	}
	for _, bound := range []bool{true, false} {
		t.Run(map[bool]string{true: "lo", false: "any"}[bound], func(t *testing.T) {
			tap, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(tap)
			if bound {
				ifi, err := netIfindex("lo")
				if err != nil {
					t.Fatal(err)
				}
				if err := unix.Bind(tap, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi}); err != nil {
					t.Fatal(err)
				}
			}
			// A tiny receive buffer: the tap drops what it does not read,
			// but the clone handed to it was copied before that.
			unix.SetsockoptInt(tap, unix.SOL_SOCKET, unix.SO_RCVBUF, 4096)
			snd, _, res, _ := transferEntries(t, workload.Config{Method: workload.MethodMsgZerocopy, Size: 64 << 10, Bytes: int64(testenv.Pick(8<<20, 4<<20))}, "")
			sent := uint64(res.SentBytes())
			zc := snd.Zerocopy
			// Each transmitted skb is copied for the tap, then again on
			// local delivery: two copies of every pinned byte.
			if zc.TxDeferredVia["packet_tap"] < sent || zc.TxDeferredVia["loopback"] < sent || zc.TxDeferredCopyBytes < sent {
				t.Errorf("tap: %+v, sent %d", zc, sent)
			}
			if !strings.Contains(zc.Verdict, "copied on local delivery (loopback, packet tap)") {
				t.Errorf("verdict %q", zc.Verdict)
			}
		})
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func netIfindex(name string) (int, error) {
	b, err := os.ReadFile(filepath.Join("/sys/class/net", name, "ifindex"))
	if err != nil {
		return 0, err
	}
	var n int
	for _, c := range strings.TrimSpace(string(b)) {
		n = n*10 + int(c-'0')
	}
	return n, nil
}

// sendfileFrom sends size bytes with sendfile(2) from src to a loopback
// TCP receiver, both in threads of this process registered with a session,
// and returns their zero-copy object and the bytes sent. unsupported, if
// set, is why EINVAL from sendfile skips the test instead of failing it.
func sendfileFrom(t *testing.T, src int, size uint64, mode, unsupported string) (*report.Zerocopy, uint64) {
	t.Helper()
	skipWithoutTracepoint(t, mode)
	tx, rx := testenv.TCPPair(t)
	ready := make(chan int, 2)
	start := make(chan struct{})
	sent := make(chan uint64, 1)
	errs := make(chan error, 2)
	go func() { // receiver
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ready <- unix.Gettid()
		<-start
		buf := make([]byte, 256<<10)
		for {
			n, err := unix.Read(rx, buf)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n == 0 {
				errs <- err
				return
			}
		}
	}()
	go func() { // sender
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		ready <- unix.Gettid()
		<-start
		var off int64
		var total uint64
		for total < size {
			n, err := unix.Sendfile(tx, src, &off, int(min(64<<10, size-total)))
			if err == unix.EINTR || err == unix.EAGAIN {
				continue
			}
			if err != nil {
				unix.Shutdown(tx, unix.SHUT_WR) // the receiver ends too
				errs <- fmt.Errorf("sendfile: %w", err)
				sent <- total
				return
			}
			if n == 0 {
				break
			}
			total += uint64(n)
		}
		unix.Shutdown(tx, unix.SHUT_WR)
		errs <- nil
		sent <- total
	}()
	tids := []int{<-ready, <-ready}
	sess, err := Open(Options{Target: Target{TIDs: tids}, ByteClasses: mode})
	if err != nil {
		close(start)
		t.Fatal(err)
	}
	defer sess.Close()
	begin, err := sess.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	close(start)
	for range 2 {
		if err := <-errs; errors.Is(err, unix.EINVAL) && unsupported != "" {
			t.Skipf("%s: %v", unsupported, err)
		} else if err != nil {
			t.Fatal(err)
		}
	}
	n := <-sent
	end, err := sess.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	iv := Delta(begin, end)
	var both []ThreadDelta
	for _, th := range iv.Threads {
		if th.Info.TID == tids[0] || th.Info.TID == tids[1] {
			both = append(both, th)
		}
	}
	return ZerocopyFor(both), n
}

func TestSendfileSourceThatCannotSplice(t *testing.T) {
	// As on a fresh machine: no tracefs until zcprof mounts it.
	if !testenv.InFreshMounts(t) {
		return
	}
	size := uint64(testenv.Pick(8<<20, 2<<20))
	// A page-cache file for reference, then the same file with O_DIRECT.
	path := filepath.Join(t.TempDir(), "payload")
	if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	// Called with the subtest's t: a skip or failure belongs to it.
	open := func(t *testing.T, flags int) int {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|flags, 0)
		if err != nil {
			if errors.Is(err, unix.EINVAL) {
				t.Skipf("%s: O_DIRECT not supported by this filesystem", path)
			}
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	for _, mode := range byteClassModes() {
		t.Run(mode+"/page cache", func(t *testing.T) {
			skipWithoutTracepoint(t, mode)
			zc, n := sendfileFrom(t, open(t, 0), size, mode, "")
			if n != size || zc.TxSplicedBytes != n || zc.TxCopiedBytes != 0 || zc.Verdict != fmt.Sprintf("sendfile: zero-copy taken for %.1f MiB (100%%); receive copied: %.1f MiB read by copy", float64(n)/(1<<20), float64(n)/(1<<20)) {
				t.Errorf("%+v, sent %d", zc, n)
			}
		})
		t.Run(mode+"/O_DIRECT", func(t *testing.T) {
			skipWithoutTracepoint(t, mode)
			zc, n := sendfileFrom(t, open(t, unix.O_DIRECT), size, mode, "")
			if n != size || zc.TxSourceCopiedBytes != n || zc.TxCopiedBytes != n || zc.TxSplicedBytes != 0 {
				t.Errorf("%+v, sent %d", zc, n)
			}
			if !strings.HasPrefix(zc.Verdict, "sendfile from a source that cannot splice") {
				t.Errorf("verdict %q", zc.Verdict)
			}
		})
		t.Run(mode+"/dev/zero", func(t *testing.T) {
			skipWithoutTracepoint(t, mode)
			zero := openDevZero(t)
			// /dev/zero has copy_splice_read on 6.12 and 6.18, none on 6.1.
			zc, n := sendfileFrom(t, zero, size, mode, "this kernel cannot splice from /dev/zero")
			if n != size || zc.TxSourceCopiedBytes != n || !strings.HasPrefix(zc.Verdict, "sendfile from a source that cannot splice") {
				t.Errorf("%+v, sent %d", zc, n)
			}
		})
	}
}

func openDevZero(t *testing.T) int {
	fd, err := unix.Open("/dev/zero", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}
