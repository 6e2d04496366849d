package profiler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/pseudofs"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/testenv"
	"github.com/zcprof/zcprof/workload"
)

// Receive paths and per-path wording on programs of our own, each
// profiled alone: this test binary re-executed as a MSG_TRUNC receiver, a
// splicing proxy, or a sendfile server writing headers first. The peers
// are this test process, which is not profiled: the child's entry has its
// side of the traffic only.

const peerChildEnv = "ZCPROF_TEST_PEER"

type peerChildSpec struct {
	Mode  string   // "trunc", "proxy" or "sendfile"
	Addrs []string // where to connect (host:port)
	File  string   // sendfile: the file to send
	// Header: bytes written by copy before the bulk (sendfile), or read
	// by copy and forwarded by copy before splicing (proxy).
	Header int
	Out    string
}

type peerChildResult struct {
	Received, ReceiveCalls uint64 // trunc: bytes recv returned
	Header                 uint64 // read or written by copy
	Spliced                [2]uint64
	Sent                   uint64 // sendfile
}

func init() { childMode(peerChildEnv, "peer", runPeerChild) }

func runPeerChild(specJSON string) error {
	var spec peerChildSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return err
	}
	var fds []int
	for _, a := range spec.Addrs {
		fd, err := dialTCP(a)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		fds = append(fds, fd)
	}
	var r peerChildResult
	var err error
	switch spec.Mode {
	case "trunc":
		err = truncReceive(fds[0], &r)
	case "proxy":
		err = spliceProxy(fds[0], fds[1], spec.Header, &r)
	case "sendfile":
		err = sendfileServe(fds[0], spec.File, spec.Header, &r)
	default:
		err = fmt.Errorf("unknown mode %q", spec.Mode)
	}
	if err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(spec.Out, b, 0o600)
}

func dialTCP(addr string) (int, error) {
	ap, err := net.ResolveTCPAddr("tcp4", addr)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	sa := &unix.SockaddrInet4{Port: ap.Port}
	copy(sa.Addr[:], ap.IP.To4())
	if err := unix.Connect(fd, sa); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// truncReceive discards everything with recv(..., MSG_TRUNC): TCP counts
// the bytes as read and copies none of them to the buffer.
func truncReceive(fd int, r *peerChildResult) error {
	buf := make([]byte, 256<<10)
	for {
		n, _, err := unix.Recvfrom(fd, buf, unix.MSG_TRUNC)
		r.ReceiveCalls++ // an EINTR return is a call too
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("recv(MSG_TRUNC): %w", err)
		}
		if n == 0 {
			return nil
		}
		r.Received += uint64(n)
	}
}

// spliceProxy reads a header from a by copy and writes it to b, then
// splices a→pipe→b and b→pipe→a until each side ends.
func spliceProxy(a, b, header int, r *peerChildResult) error {
	buf := make([]byte, header)
	for got := 0; got < header; {
		n, err := unix.Read(a, buf[got:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return fmt.Errorf("read header: %d bytes, %v", got, err)
		}
		got += n
	}
	for done := 0; done < header; {
		n, err := unix.Write(b, buf[done:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("write header: %w", err)
		}
		done += n
	}
	r.Header = uint64(header)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, dir := range [][2]int{{a, b}, {b, a}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Spliced[i], errs[i] = spliceAll(dir[0], dir[1])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// spliceAll moves bytes from socket in to socket out through a pipe until
// in ends, then half-closes out.
func spliceAll(in, out int) (uint64, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return 0, err
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	var total uint64
	for {
		n, err := unix.Splice(in, nil, p[1], nil, 256<<10, unix.SPLICE_F_MOVE)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return total, fmt.Errorf("splice socket→pipe: %w", err)
		}
		if n == 0 {
			return total, unix.Shutdown(out, unix.SHUT_WR)
		}
		for left := n; left > 0; {
			m, err := unix.Splice(p[0], nil, out, nil, int(left), unix.SPLICE_F_MOVE)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return total, fmt.Errorf("splice pipe→socket: %w", err)
			}
			left -= m
		}
		total += uint64(n)
	}
}

// sendfileServe writes a header by copy, then the file by sendfile.
func sendfileServe(fd int, file string, header int, r *peerChildResult) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if n, err := unix.Write(fd, bytes.Repeat([]byte{'h'}, header)); err != nil || n != header {
		return fmt.Errorf("write header: %d of %d, %v", n, header, err)
	}
	r.Header = uint64(header)
	var off int64
	for off < st.Size() {
		n, err := unix.Sendfile(fd, int(f.Fd()), &off, int(min(st.Size()-off, 1<<20)))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("sendfile: %w", err)
		}
		r.Sent += uint64(n)
	}
	return unix.Shutdown(fd, unix.SHUT_WR)
}

// peerListener accepts one connection on loopback and serves it with fn
// in the test process; wait returns fn's error.
type peerListener struct {
	ln   net.Listener
	done chan error
}

func listenPeer(t *testing.T, fn func(c *net.TCPConn) error) *peerListener {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &peerListener{ln: ln, done: make(chan error, 1)}
	go func() {
		c, err := ln.Accept()
		if err != nil {
			p.done <- err
			return
		}
		defer c.Close()
		p.done <- fn(c.(*net.TCPConn))
	}()
	return p
}

func (p *peerListener) addr() string { return p.ln.Addr().String() }

// profilePeer profiles the peer child alone and returns its entry.
func profilePeer(t *testing.T, spec peerChildSpec, mode string) (report.Process, peerChildResult, *report.Document) {
	t.Helper()
	spec.Out = filepath.Join(t.TempDir(), "result.json")
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(peerChildEnv, string(b))
	var r peerChildResult
	p, d := profileByteClassChild(t, mode, spec.Out, &r)
	t.Logf("verdict: %s\nreason: %s", p.Zerocopy.Verdict, p.Zerocopy.Reason)
	return p, r, d
}

// sendN writes n bytes to c and half-closes it.
func sendN(c *net.TCPConn, n int64) error {
	if _, err := io.CopyN(c, zeroReader{}, n); err != nil {
		return err
	}
	return c.CloseWrite()
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func pathOf(p report.Process, name string) report.Path {
	for _, q := range p.Paths {
		if q.Path == name {
			return q
		}
	}
	return report.Path{Path: name}
}

// A receiver that discards with MSG_TRUNC, profiled alone: every byte is a
// TCP receive, none was copied to user memory. Without the byte-class
// programs too: the accounting counts a MSG_TRUNC receive's bytes itself.
func TestVerdictMsgTruncReceiver(t *testing.T) {
	// As on a fresh machine: no tracefs until zcprof mounts it.
	if !testenv.InFreshMounts(t) {
		return
	}
	total := int64(testenv.Pick(64<<20, 16<<20))
	for _, mode := range append(byteClassModes(), byteclass.Off) {
		t.Run(mode, func(t *testing.T) {
			skipWithoutTracepoint(t, mode)
			peer := listenPeer(t, func(c *net.TCPConn) error { return sendN(c, total) })
			p, r, _ := profilePeer(t, peerChildSpec{Mode: "trunc", Addrs: []string{peer.addr()}}, mode)
			if err := <-peer.done; err != nil {
				t.Fatal(err)
			}
			zc := p.Zerocopy
			if r.Received != uint64(total) || zc.RxDiscardedBytes != r.Received || zc.RxCopiedBytes != 0 || zc.RxSplicedBytes != 0 || zc.TxBytes != 0 {
				t.Errorf("received %d of %d: %+v", r.Received, total, zc)
			}
			if rx := pathOf(p, "rx.read"); rx.Bytes != r.Received || rx.Calls != r.ReceiveCalls {
				t.Errorf("rx.read %d bytes in %d calls, the child received %d in %d", rx.Bytes, rx.Calls, r.Received, r.ReceiveCalls)
			}
			if want := "receive: " + report.MiB(r.Received) + " discarded without copy (MSG_TRUNC)"; zc.Verdict != want {
				t.Errorf("verdict\n got %q\nwant %q", zc.Verdict, want)
			}
		})
	}
}

// A proxy that reads a request line by copy and forwards it, then splices
// socket→pipe→socket both ways.
func TestVerdictSplicingProxy(t *testing.T) {
	// As on a fresh machine: no tracefs until zcprof mounts it.
	if !testenv.InFreshMounts(t) {
		return
	}
	const header = 74
	each := int64(testenv.Pick(32<<20, 8<<20))
	for _, mode := range byteClassModes() {
		t.Run(mode, func(t *testing.T) {
			skipWithoutTracepoint(t, mode)
			var fromServer, fromClient int64
			client := listenPeer(t, func(c *net.TCPConn) error {
				var wg sync.WaitGroup
				wg.Add(1)
				go func() { defer wg.Done(); fromServer, _ = io.Copy(io.Discard, c) }()
				if _, err := c.Write(bytes.Repeat([]byte{'r'}, header)); err != nil {
					return err
				}
				err := sendN(c, each)
				wg.Wait()
				return err
			})
			server := listenPeer(t, func(c *net.TCPConn) error {
				var wg sync.WaitGroup
				wg.Add(1)
				go func() { defer wg.Done(); fromClient, _ = io.Copy(io.Discard, c) }()
				err := sendN(c, each)
				wg.Wait()
				return err
			})
			p, r, _ := profilePeer(t, peerChildSpec{Mode: "proxy", Addrs: []string{client.addr(), server.addr()}, Header: header}, mode)
			for _, l := range []*peerListener{client, server} {
				if err := <-l.done; err != nil {
					t.Fatal(err)
				}
			}
			if r.Spliced != [2]uint64{uint64(each), uint64(each)} || fromClient != header+each || fromServer != each {
				t.Fatalf("proxy spliced %v, server got %d, client got %d (want %d+%d and %d)", r.Spliced, fromClient, fromServer, header, each, each)
			}
			spliced := 2 * uint64(each)
			zc := p.Zerocopy
			if zc.RxSplicedBytes != spliced || zc.RxCopiedBytes != header || zc.RxDiscardedBytes != 0 || zc.RxMappedBytes != 0 {
				t.Errorf("receive: spliced %d copied %d discarded %d mapped %d, want %d spliced and %d copied",
					zc.RxSplicedBytes, zc.RxCopiedBytes, zc.RxDiscardedBytes, zc.RxMappedBytes, spliced, header)
			}
			if zc.TxBytes != spliced+header || zc.TxSplicedBytes != spliced || zc.TxCopiedBytes != header {
				t.Errorf("send: %d bytes, spliced %d copied %d; want %d spliced and %d copied", zc.TxBytes, zc.TxSplicedBytes, zc.TxCopiedBytes, spliced, header)
			}
			want := fmt.Sprintf("splice: zero-copy taken for %s (100%%); %d B written by copy; receive by splice: %s (page references); %d B read by copy",
				report.MiB(spliced), header, report.MiB(spliced), header)
			if zc.Verdict != want {
				t.Errorf("verdict\n got %q\nwant %q", zc.Verdict, want)
			}
			// Per path: the spliced receive path has only spliced bytes.
			if rs := pathOf(p, "rx.splice"); rs.Bytes != spliced || rs.Zerocopy == nil ||
				rs.Zerocopy.Verdict != "receive by splice: "+report.MiB(spliced)+" (page references)" {
				t.Errorf("rx.splice %d bytes, zerocopy %+v", rs.Bytes, rs.Zerocopy)
			}
		})
	}
}

// A sendfile server that writes its headers by copy first: zero-copy is
// taken for the bulk, and the headers are named by size.
func TestVerdictSendfileServerWithHeaders(t *testing.T) {
	// As on a fresh machine: no tracefs until zcprof mounts it.
	if !testenv.InFreshMounts(t) {
		return
	}
	const header = 1 << 10
	size := int64(testenv.Pick(64<<20, 16<<20))
	file := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(file, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mode := range byteClassModes() {
		t.Run(mode, func(t *testing.T) {
			skipWithoutTracepoint(t, mode)
			var got int64
			peer := listenPeer(t, func(c *net.TCPConn) (err error) { got, err = io.Copy(io.Discard, c); return })
			p, r, d := profilePeer(t, peerChildSpec{Mode: "sendfile", Addrs: []string{peer.addr()}, File: file, Header: header}, mode)
			if err := <-peer.done; err != nil {
				t.Fatal(err)
			}
			if r.Sent != uint64(size) || got != header+size {
				t.Fatalf("sent %d of %d, peer got %d", r.Sent, size, got)
			}
			zc := p.Zerocopy
			if zc.TxBytes != header+uint64(size) || zc.TxSplicedBytes != uint64(size) || zc.TxCopiedBytes != header || zc.RxBytes() != 0 {
				t.Errorf("%+v", zc)
			}
			assertVerdict(t, d, zc, "sendfile: zero-copy taken for "+report.MiB(uint64(size))+" (100%); 1.0 KiB written by copy")
		})
	}
}

// Without tracefs and no way to mount it, the byte classes that come from
// classic tracepoints are missing (io_uring notifications; before 6.3 the
// sends themselves): a verdict that depends on one says it cannot tell
// instead of claiming zero-copy. What the accounting's own syscall
// handlers note for the byte classes (a sendfile source that cannot
// splice, TCP_ZEROCOPY_RECEIVE's mapped bytes) needs no tracefs.
func TestVerdictCannotTellWithoutSources(t *testing.T) {
	if !testenv.InFreshMounts(t) {
		return
	}
	if err := unix.Mount("tmpfs", pseudofs.LockDir, "tmpfs", unix.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	before63 := testenv.Expected("TRACEPOINTS_MISSING", "sock_send_length")
	t.Run("sendfile server", func(t *testing.T) {
		const header = 1 << 10
		size := int64(testenv.Pick(16<<20, 4<<20))
		file := filepath.Join(t.TempDir(), "body")
		if err := os.WriteFile(file, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		peer := listenPeer(t, func(c *net.TCPConn) error { _, err := io.Copy(io.Discard, c); return err })
		spec := peerChildSpec{Mode: "sendfile", Addrs: []string{peer.addr()}, File: file, Header: header, Out: filepath.Join(t.TempDir(), "result.json")}
		b, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv(peerChildEnv, string(b))
		var r peerChildResult
		d := profileSelf(t, ProfileOptions{}, spec.Out, &r).Document
		if err := <-peer.done; err != nil {
			t.Fatal(err)
		}
		if slices.Contains(d.Backends.ByteClassesUnavailable, "sendfile sources that cannot splice") || len(d.Processes) != 1 {
			t.Fatalf("byte_classes_unavailable %q, %d processes", d.Backends.ByteClassesUnavailable, len(d.Processes))
		}
		zc := d.Processes[0].Zerocopy
		spliced, copied := uint64(r.Sent), uint64(header)
		var unavailable []string
		want := "sendfile: zero-copy taken for " + report.MiB(r.Sent) + " (100%); 1.0 KiB written by copy"
		if before63 {
			// Before 6.3 the send decisions themselves come from classic
			// syscall tracepoints (syscall_return), so without tracefs no
			// send is classified at all, and the verdict says so (the table
			// shows it beside the tx.sendfile bytes the accounting counted).
			spliced, copied = 0, 0
			unavailable = []string{"sends"}
			want = "no TCP bytes classified; cannot tell what sends would show (not attached)"
		}
		if zc.TxSplicedBytes != spliced || zc.TxCopiedBytes != copied || !slices.Equal(zc.Unavailable, unavailable) {
			t.Errorf("%+v", zc)
		}
		assertVerdict(t, d, zc, want)
	})
	t.Run("io_uring SEND_ZC", func(t *testing.T) {
		cfg := workload.Config{Method: workload.MethodIOUringZC, Size: 64 << 10, Bytes: int64(testenv.Pick(16<<20, 4<<20))}
		mode := preferredMode(t)
		out := setTransferChild(t, cfg)
		var r transferChildResult
		d := profileSelf(t, ProfileOptions{}, out, &r).Document
		if !slices.Contains(d.Backends.ByteClassesUnavailable, "io_uring notifications") || len(d.Processes) != 1 {
			t.Fatalf("byte_classes_unavailable %q, %d processes", d.Backends.ByteClassesUnavailable, len(d.Processes))
		}
		p := d.Processes[0]
		zc := p.Zerocopy
		if uringUnclassified(t, mode, cfg.Method, zc) {
			return
		}
		if !slices.Contains(zc.Unavailable, "io_uring notifications") || !strings.Contains(zc.Verdict, "cannot tell what io_uring notifications") {
			t.Errorf("%+v", zc)
		}
		if !before63 && (zc.TxPinnedBytes != r.Sent || zc.TxDeferredCopyBytes != r.Sent) {
			t.Errorf("pinned %d, copied on local delivery %d, sent %d", zc.TxPinnedBytes, zc.TxDeferredCopyBytes, r.Sent)
		}
		t.Logf("verdict: %s", zc.Verdict)
	})
}

// assertVerdict: zc's verdict is want, and the table of d shows it.
func assertVerdict(t *testing.T, d *report.Document, zc *report.Zerocopy, want string) {
	t.Helper()
	if zc.Verdict != want {
		t.Errorf("verdict\n got %q\nwant %q", zc.Verdict, want)
	}
	var table bytes.Buffer
	if err := report.WriteTable(&table, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "zero-copy: "+want+"\n") {
		t.Errorf("table lacks the verdict:\n%s", table.String())
	}
}
