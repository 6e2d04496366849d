package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/report/html/htmltest"
	"github.com/zcprof/zcprof/profiler/testenv"
	"github.com/zcprof/zcprof/workload"
	"github.com/zcprof/zcprof/workload/netns"
	zrun "github.com/zcprof/zcprof/workload/run"
	"github.com/zcprof/zcprof/workload/run/runtest"
)

// Two network namespaces joined by a veth pair stand in for two hosts:
// the client (zcprof run --remote) runs in the sender namespace, the agent
// (zcprof serve) in the receiver one, in a UTS namespace of its own so
// that it has its own host name.
const peerHostname = "zcprof-peer"

var (
	agentIP     = fmt.Sprintf("%d.%d.%d.%d", netns.ReceiverAddr[0], netns.ReceiverAddr[1], netns.ReceiverAddr[2], netns.ReceiverAddr[3])
	agentListen = agentIP + ":7471"
)

type twoHosts struct {
	pair                *netns.Pair
	token               string // a token file both hosts hold
	clientCfg, agentCfg string // the hosts' config dirs (pins, certificate)
	fingerprint         string // the agent's certificate, as it printed it
	agentLacksIOUring   bool   // the agent runs as on a kernel without io_uring
}

func newTwoHosts(t *testing.T) *twoHosts {
	t.Helper()
	requireBPF(t)
	if testenv.InVM() {
		// Dozens of sessions on both sides would take most of an emulated
		// guest's time; the place for two hosts there is two guests.
		t.Skip("the two-namespace hosts run natively (make test); two qemu guests for make vmtest are not built yet")
	}
	// MTU 9000: room for the 4096-byte MSS of TCP_ZEROCOPY_RECEIVE.
	p, err := netns.Create(9000)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	dir := t.TempDir()
	h := &twoHosts{pair: p, token: filepath.Join(dir, "token"), clientCfg: filepath.Join(dir, "client"), agentCfg: filepath.Join(dir, "agent")}
	if err := os.WriteFile(h.token, []byte("4f1c9a0e7d2b6c8a5e3f1d0b9a8c7e6f\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// waitFor polls until cond holds or the time is up.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
	}
}

type agentProc struct {
	cmd *exec.Cmd
	log *testenv.SyncBuffer
}

// agentCmd is `zcprof serve args` on the peer host (exec all the way, so
// the process is the agent itself).
func (h *twoHosts) agentCmd(args ...string) *exec.Cmd {
	exe, env := zcprofBin, append(os.Environ(), "XDG_CONFIG_HOME="+h.agentCfg)
	if h.agentLacksIOUring {
		var lacks string
		exe, lacks = withoutIOUringExec()
		env = append(env, lacks)
	}
	cmd := exec.Command("nsenter", append([]string{"--net=" + h.pair.Receiver.Path(), "unshare", "-u", "sh", "-c",
		"hostname " + peerHostname + ` && exec "$0" serve "$@"`, exe}, args...)...)
	cmd.Env = env
	return cmd
}

// startAgent serves on the peer's address with the token until the test ends.
func (h *twoHosts) startAgent(t *testing.T, args ...string) *agentProc {
	t.Helper()
	return h.startAgentOn(t, agentListen, args...)
}

// startAgentOn is startAgent on another address of the peer.
func (h *twoHosts) startAgentOn(t *testing.T, listen string, args ...string) *agentProc {
	t.Helper()
	a := &agentProc{cmd: h.agentCmd(append([]string{"--listen", listen, "--token-file", h.token}, args...)...), log: &testenv.SyncBuffer{}}
	a.cmd.Stderr = a.log
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.cmd.Process.Kill()
		a.cmd.Wait()
	})
	waitFor(t, 10*time.Second, "the agent listening", func() bool { return strings.Contains(a.log.String(), "listening on") })
	_, fp, _ := strings.Cut(a.log.String(), "certificate sha256 ")
	h.fingerprint = strings.TrimSpace(fp)
	return a
}

// client is `zcprof args` on this host.
func (h *twoHosts) client(args ...string) *exec.Cmd {
	cmd := exec.Command("nsenter", append([]string{"--net=" + h.pair.Sender.Path(), zcprofBin}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+h.clientCfg)
	return cmd
}

// remoteArgs run against the agent, its certificate pinned by flag.
func (h *twoHosts) remoteArgs(args ...string) []string {
	return append([]string{"run", "--remote", agentListen, "--token-file", h.token, "--fingerprint", h.fingerprint}, args...)
}

// assertRemoteCells: every cell moved exactly want bytes, each side was
// measured on its own host (named), within the precision bound.
func assertRemoteCells(t *testing.T, d *report.Document, cells int, want uint64, senderHost, receiverHost string) {
	t.Helper()
	if len(d.Cells) != cells {
		t.Fatalf("%d cells, want %d", len(d.Cells), cells)
	}
	for _, c := range d.Cells {
		name := c.Method + "→" + c.RxMethod
		w := c.Workload
		if c.Topology != workload.TopoRemote || w.SentBytes != want || w.ReceivedBytes != want || w.PayloadErrors != 0 || c.ThroughputBps <= 0 {
			t.Errorf("%s: topology %q, sent %d, received %d, payload errors %d, %f bit/s; want %d bytes", name, c.Topology, w.SentBytes, w.ReceivedBytes, w.PayloadErrors, c.ThroughputBps, want)
		}
		if c.RxMethod == workload.RxZerocopy && w.RxMappedBytes+w.RxCopiedBytes != w.ReceivedBytes {
			t.Errorf("%s: mapped %d + copied %d != received %d", name, w.RxMappedBytes, w.RxCopiedBytes, w.ReceivedBytes)
		}
		for _, s := range []struct {
			who  string
			p    report.Process
			host string
		}{{"sender", c.Sender, senderHost}, {"receiver", c.Receiver, receiverHost}} {
			if s.p.Host == nil || s.p.Host.Hostname != s.host || s.p.Host.Kernel == "" || s.p.Host.CPUs == 0 || s.p.Host.Backends.Accounting == "" {
				t.Errorf("%s %s: host %+v, want %q", name, s.who, s.p.Host, s.host)
			}
			if len(s.p.Threads) != c.Streams {
				t.Errorf("%s %s: %d threads", name, s.who, len(s.p.Threads))
			}
			runtest.AssertSchedstat(t, name+" "+s.who, s.p)
		}
	}
	assertGone(t, d.Backends.ProgramIDs)
}

// TestRemoteTCP: every send method × read and zerocopy receive between two
// hosts over TLS with a token, data on fixed ports; then --reverse.
func TestRemoteTCP(t *testing.T) {
	h := newTwoHosts(t)
	h.startAgent(t, "--data-port", "7480-7483")
	local, _ := os.Hostname()
	r := run(t, h.client("run", "--remote", agentListen, "--token-file", h.token, "--method", strings.Join(workload.Methods, ","), "--rx-method", "read,zerocopy",
		"--bytes", "16M", "--backend", "none", "--threads", "--json", "-q"))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "pinned the agent at "+agentListen+" on first use") {
		t.Errorf("stderr %q: no note of the pinned certificate", r.stderr)
	}
	assertRemoteCells(t, decode(t, r.stdout), 2*len(workload.Methods), 16<<20, local, peerHostname)

	// --reverse: the peer sends, this host receives on its own data ports,
	// by every receive method; the peer's senders use the congestion
	// control and the MSS asked for, each side pinned on its own host.
	r = run(t, h.client(h.remoteArgs("--reverse", "--data-port", "7490-7491", "--method", "write,msg_zerocopy",
		"--rx-method", strings.Join(workload.RxMethods, ","), "--streams", "2", "--bytes", "8M", "--congestion", "cubic", "--mss", "1000", "--cpus", "0:1",
		"--backend", "none", "--threads", "--json", "-q")...))
	if r.code != 0 {
		t.Fatalf("--reverse: exit %d: %s", r.code, r.stderr)
	}
	d := decode(t, r.stdout)
	assertRemoteCells(t, d, 2*len(workload.RxMethods), 2*8<<20, peerHostname, local)
	for _, c := range d.Cells {
		if c.Workload.Congestion != "cubic" {
			t.Errorf("%s→%s: the peer's senders used %q, want cubic", c.Method, c.RxMethod, c.Workload.Congestion)
		}
		// Less the timestamp option, on in every new namespace.
		if c.Workload.MSS != 1000-12 {
			t.Errorf("%s→%s: the peer's senders' MSS is %d, want 988 (--mss 1000)", c.Method, c.RxMethod, c.Workload.MSS)
		}
	}
}

// TestRemoteCI: --ci across hosts repeats a cell until the interval of
// the throughput and of both sides' CPU (the receiver's measured by the
// peer) is narrow enough, or says it was not after --repeat runs.
func TestRemoteCI(t *testing.T) {
	h := newTwoHosts(t)
	h.startAgent(t)
	for _, c := range []struct {
		ci      string
		runs    int
		reached bool
	}{
		{"50,100", 3, true}, // within ±50% at 50%: any three runs not ten times apart
		{"99,0.001", 4, false},
	} {
		r := run(t, h.client(h.remoteArgs("--method", "write", "--bytes", "4M", "--ci", c.ci, "--repeat", "4",
			"--backend", "none", "--json", "-q")...))
		if r.code != 0 {
			t.Fatalf("--ci %s: exit %d: %s", c.ci, r.code, r.stderr)
		}
		d := decode(t, r.stdout)
		if len(d.Cells) != 1 {
			t.Fatalf("--ci %s: %d cells", c.ci, len(d.Cells))
		}
		cell := d.Cells[0]
		if cell.Repeats != c.runs || cell.ConfidenceReached == nil || *cell.ConfidenceReached != c.reached {
			t.Errorf("--ci %s: %d runs, reached %v; want %d runs, reached %v", c.ci, cell.Repeats, cell.ConfidenceReached, c.runs, c.reached)
		}
		for _, k := range []string{"throughput_bps", "sender.on_cpu_ns", "receiver.on_cpu_ns"} {
			if s := cell.Stats[k]; s.N != c.runs || s.Mean <= 0 {
				t.Errorf("--ci %s: %s over %d runs, mean %f; want %d runs", c.ci, k, s.N, s.Mean, c.runs)
			}
		}
		warned := strings.Contains(strings.Join(d.Warnings, "\n"), "confidence interval is not within")
		if warned == c.reached {
			t.Errorf("--ci %s: warnings %q", c.ci, d.Warnings)
		}
		if cell.Workload.ReceivedBytes != 4<<20 || cell.Receiver.Host == nil || cell.Receiver.Host.Hostname != peerHostname {
			t.Errorf("--ci %s: received %d, receiver host %+v", c.ci, cell.Workload.ReceivedBytes, cell.Receiver.Host)
		}
	}
}

// TestRemoteIPv6: the agent reached at an IPv6 address takes its data
// connections over IPv6 too, both ways.
func TestRemoteIPv6(t *testing.T) {
	h := newTwoHosts(t)
	listen := "[" + netns.ReceiverAddr6 + "]:7475"
	a := h.startAgentOn(t, listen, "--data-port", "7480-7481")
	local, _ := os.Hostname()
	base := []string{"run", "--remote", listen, "--token-file", h.token, "--fingerprint", h.fingerprint,
		"--rx-method", "read,zerocopy", "--bytes", "8M", "--backend", "none", "--threads", "--json", "-q"}
	r := run(t, h.client(append(base, "--method", "write,msg_zerocopy")...))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	assertRemoteCells(t, decode(t, r.stdout), 4, 8<<20, local, peerHostname)
	// The agent names its client by the address it came from.
	if want := "[" + netns.SenderAddr6 + "]"; !strings.Contains(a.log.String(), want) {
		t.Errorf("agent log %q: no client at %s", a.log.String(), want)
	}
	r = run(t, h.client(append(base, "--reverse", "--data-port", "7490", "--method", "write")...))
	if r.code != 0 {
		t.Fatalf("--reverse: exit %d: %s", r.code, r.stderr)
	}
	assertRemoteCells(t, decode(t, r.stdout), 2, 8<<20, peerHostname, local)
}

// TestRemoteSSH: the ssh:// form through a stand-in for ssh that starts
// `zcprof serve --stdio` on the peer the way sshd would (SSH_CONNECTION
// set); attribution on both sides; the table and compare of two remote
// runs.
func TestRemoteSSH(t *testing.T) {
	h := newTwoHosts(t)
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "ssh-args")
	fakeSSH := filepath.Join(dir, "ssh")
	script := fmt.Sprintf(`#!/bin/sh
echo "$@" > %s
exec nsenter --net=%s env SSH_CONNECTION="%d.%d.%d.%d 50000 %s 22" XDG_CONFIG_HOME=%s unshare -u sh -c 'hostname %s && exec %s serve --stdio'
`, argsFile, h.pair.Receiver.Path(), netns.SenderAddr[0], netns.SenderAddr[1], netns.SenderAddr[2], netns.SenderAddr[3], agentIP, h.agentCfg, peerHostname, zcprofBin)
	if err := os.WriteFile(fakeSSH, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ssh := func(args ...string) result {
		// A host name only the stand-in's "ssh config" knows: the data
		// addresses come from the agent (SSH_CONNECTION), not from DNS.
		cmd := h.client(append([]string{"run", "--remote", "ssh://lab@zcprof-lab2:2222"}, args...)...)
		cmd.Env = append(cmd.Env, "ZCPROF_SSH="+fakeSSH)
		return run(t, cmd)
	}
	local, _ := os.Hostname()
	r := ssh("--method", "write,msg_zerocopy", "--rx-method", "read,zerocopy", "--bytes", "16M", "--threads", "--json", "-q")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	d := decode(t, r.stdout)
	assertRemoteCells(t, d, 4, 16<<20, local, peerHostname)
	// Each side's categories come from its own host's backend.
	for _, c := range d.Cells {
		if c.Receiver.Host.Backends.Attribution == "" || c.Sender.Host.Backends.Attribution == "" {
			t.Errorf("%s: attribution %q here, %q on the peer", c.Method, c.Sender.Host.Backends.Attribution, c.Receiver.Host.Backends.Attribution)
		}
	}
	if b, _ := os.ReadFile(argsFile); strings.TrimSpace(string(b)) != "-o BatchMode=yes -p 2222 -- lab@zcprof-lab2 zcprof serve --stdio" {
		t.Errorf("ssh ran with %q", b)
	}

	// compare of two remote runs, as of two local ones.
	var files []string
	for i := range 2 {
		r := ssh("--method", "write", "--bytes", "8M", "--repeat", "3", "--backend", "none", "--json", "-q")
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		f := filepath.Join(dir, fmt.Sprintf("run%d.json", i))
		os.WriteFile(f, []byte(r.stdout), 0o644)
		files = append(files, f)
	}
	res := compareJSON(t, files...)
	if len(res.Comparisons) != 1 || len(res.Comparisons[0].Pairs) != 1 {
		t.Fatalf("compare of two remote runs: %+v", res)
	}
	if tp := figure(t, res.Comparisons[0].Pairs[0], "throughput_bps"); !tp.Testable || tp.Base.N != 3 || tp.New.N != 3 {
		t.Errorf("throughput over 3 remote repeats not testable: %+v", tp)
	}
	// The table and the HTML report, as of a local run.
	page := filepath.Join(dir, "remote.html")
	r = ssh("--method", "write,msg_zerocopy", "--bytes", "8M", "-q", "--html", page)
	if r.code != 0 || !strings.Contains(r.stdout, "msg_zerocopy→read 64K ×1") || !strings.Contains(r.stdout, "receiver") {
		t.Errorf("table: exit %d: %s\n%s", r.code, r.stderr, r.stdout)
	}
	htmltest.Check(t, page, 2)
	// --byte-classes reaches the peer: both sides observe sends as asked.
	r = ssh("--method", "write", "--bytes", "4M", "--backend", "none", "--byte-classes", "syscall_return", "--json", "-q")
	if r.code != 0 {
		t.Fatalf("--byte-classes syscall_return: exit %d: %s", r.code, r.stderr)
	}
	for _, c := range decode(t, r.stdout).Cells {
		if s, rx := c.Sender.Host.Backends.ByteClasses, c.Receiver.Host.Backends.ByteClasses; s != "syscall_return" || rx != "syscall_return" {
			t.Errorf("--byte-classes syscall_return: %q here, %q on the peer", s, rx)
		}
	}
	r = ssh("--method", "write", "--bytes", "4M", "--backend", "none", "-q", "--csv")
	if r.code != 0 || !strings.Contains(r.stdout, ",sender,") || !strings.Contains(r.stdout, ",receiver,") {
		t.Errorf("csv: exit %d: %s\n%s", r.code, r.stderr, r.stdout)
	}
}

// TestRemoteBadInput: each refusal is one line and a non-zero exit, and
// leaves nothing behind on either host: no BPF program loaded, no namespace
// or temp file of the client's, and an agent that holds no program, link
// or payload file once the client is gone (its side released).
func TestRemoteBadInput(t *testing.T) {
	h := newTwoHosts(t)
	agent := h.startAgent(t, "--methods", "write", "--data-port", "7480")
	dir := t.TempDir()
	wrong := filepath.Join(dir, "wrong")
	os.WriteFile(wrong, []byte("00000000000000000000000000000000\n"), 0o600)
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("secret\n"), 0o600)
	// ssh that fails, and an agent on a pipe that no sshd started.
	failSSH := filepath.Join(dir, "ssh-fails")
	os.WriteFile(failSSH, []byte("#!/bin/sh\necho 'ssh: Could not resolve hostname lab9: Name or service not known' >&2\nexit 255\n"), 0o755)
	noSSHD := filepath.Join(dir, "ssh-no-sshd")
	os.WriteFile(noSSHD, []byte("#!/bin/sh\nexec env -u SSH_CONNECTION "+zcprofBin+" serve --stdio\n"), 0o755)
	withSSH := func(ssh string, cmd *exec.Cmd) *exec.Cmd {
		cmd.Env = append(cmd.Env, "ZCPROF_SSH="+ssh)
		return cmd
	}
	// The first contact pins the agent's certificate, and says so.
	if r := run(t, h.client("run", "--remote", agentListen, "--method", "sendfile")); !strings.Contains(r.stderr, "on first use") {
		t.Errorf("first contact: %q", r.stderr)
	}
	for _, c := range []struct {
		cmd  *exec.Cmd
		want string
	}{
		{h.client("run", "--remote", agentListen, "--topology", "netns"), "--remote and --topology exclude each other"},
		{h.client("run", "--reverse"), "--reverse needs --remote"},
		{h.client("run", "--remote", agentListen, "--data-port", "7490"), "it needs --reverse"},
		{h.client("run", "--remote", agentListen, "--reverse", "--data-port", "70000"), `--data-port "70000"`},
		{h.client("run", "--remote", agentListen), "requires a token: give --token-file"},
		{h.client("run", "--remote", agentListen, "--token-file", wrong), "authentication failed: wrong token"},
		{h.client("run", "--remote", agentListen, "--token-file", short), "at least 16 bytes"},
		{h.client(h.remoteArgs("--method", "sendfile")...), `does not allow method "sendfile" (not in its --methods)`},
		{h.client(h.remoteArgs("--method", "write", "--streams", "2", "--bytes", "1M")...), "the agent at " + peerHostname + " (" + agentListen + "): --data-port 7480 is too narrow for 2 streams"},
		// --cpus per side: the receiver's CPU is the agent's to check.
		{h.client(h.remoteArgs("--method", "write", "--bytes", "1M", "--cpus", "0:99")...), "the agent at " + peerHostname + " (" + agentListen + "): --cpus: receiver cpu 99 out of range"},
		{h.client(h.remoteArgs("--method", "write", "--cpus", "99:0")...), "sender CPU 99 out of range (this machine has CPUs"},
		{h.client("run", "--remote", agentIP+":7999"), "cannot reach the agent at " + agentIP + ":7999"},
		{h.client("run", "--remote", "no-such-host.invalid:7471"), `cannot resolve "no-such-host.invalid"`},
		{h.client("run", "--remote", "ssh://"), "want ssh://[user@]host[:port]"},
		{withSSH(failSSH, h.client("run", "--remote", "ssh://lab9")), "cannot reach the agent at lab9: ssh: Could not resolve hostname lab9"},
		{withSSH(noSSHD, h.client("run", "--remote", "ssh://lab9")), "has no data address"},
		{h.agentCmd("--listen", agentIP+":7472"), "is not a loopback address: refusing to serve the network without --token-file"},
		{h.agentCmd("--listen", "127.0.0.1:7472", "--stdio"), "either --stdio or --listen"},
	} {
		progsBefore := loadedPrograms()
		r := run(t, c.cmd)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code == 0 || len(lines) != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want one line containing %q", c.cmd.Args, r.code, r.stderr, c.want)
		}
		assertNothingLeft(t, c.cmd.Args, c.cmd.Process.Pid, progsBefore)
		// The agent learns of the client's exit from its connection:
		// give it a moment to release its side.
		waitFor(t, 5*time.Second, fmt.Sprintf("%v: the agent releasing its BPF programs and links", c.cmd.Args), func() bool { return !agentHoldsBPF(agent) })
		if files := tempFilesOf(agent.cmd.Process.Pid); len(files) > 0 {
			t.Errorf("%v: the agent keeps temp files %v", c.cmd.Args, files)
		}
	}
}

// TestRemoteMethodThePeerLacks: an agent whose kernel lacks io_uring
// refuses, in one line that says why, to be the sender of an io_uring
// method, leaving nothing behind, and is still the receiver of one (it
// runs no send method then).
func TestRemoteMethodThePeerLacks(t *testing.T) {
	h := newTwoHosts(t)
	h.agentLacksIOUring = true
	agent := h.startAgent(t)
	progsBefore := loadedPrograms()
	cmd := h.client(h.remoteArgs("--reverse", "--method", "io_uring_zc", "--bytes", "4M")...)
	r := run(t, cmd)
	want := `the agent at ` + peerHostname + ` (` + agentListen + `) cannot send with "io_uring_zc": io_uring is not built into this kernel (io_uring_setup: ENOSYS)`
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); r.code == 0 || len(lines) != 1 || lines[0] != "zcprof: "+want {
		t.Errorf("--reverse: exit %d, stderr %q; want the one line %q", r.code, r.stderr, want)
	}
	assertNothingLeft(t, cmd.Args, cmd.Process.Pid, progsBefore)
	waitFor(t, 5*time.Second, "the agent releasing its BPF programs and links", func() bool { return !agentHoldsBPF(agent) })

	// The default matrix, reversed: the agent's kernel leaves io_uring_zc out.
	r = run(t, h.client(h.remoteArgs("--reverse", "--bytes", "1M", "--backend", "none", "--byte-classes", "off", "--json", "-q")...))
	if want := "zcprof: the default matrix leaves out io_uring_zc: " + want; r.code != 0 || strings.TrimSpace(r.stderr) != want {
		t.Errorf("--reverse, default matrix: exit %d, stderr %q; want exit 0 and the one line %q", r.code, r.stderr, want)
	}
	cells := decode(t, r.stdout).Cells
	if len(cells) != len(zrun.DefaultMethods)-1 {
		t.Errorf("--reverse, default matrix: %d cells, want %d", len(cells), len(zrun.DefaultMethods)-1)
	}
	for _, c := range cells {
		if c.Method == workload.MethodIOUringZC || c.Workload.ReceivedBytes != 1<<20 {
			t.Errorf("--reverse, default matrix: cell %s received %d", c.Method, c.Workload.ReceivedBytes)
		}
	}

	r = run(t, h.client(h.remoteArgs("--method", "io_uring_zc", "--bytes", "4M", "--backend", "none", "--json", "-q")...))
	if r.code != 0 {
		t.Fatalf("io_uring_zc to the agent: exit %d: %s", r.code, r.stderr)
	}
	w := decode(t, r.stdout).Cells[0].Workload
	if w.SentBytes != 4<<20 || w.ReceivedBytes != 4<<20 {
		t.Errorf("io_uring_zc to the agent: sent %d, received %d; want %d", w.SentBytes, w.ReceivedBytes, 4<<20)
	}
}

// TestServeDefaultBind: without --listen the agent serves loopback only.
func TestServeDefaultBind(t *testing.T) {
	h := newTwoHosts(t)
	a := &agentProc{cmd: h.agentCmd(), log: &testenv.SyncBuffer{}}
	a.cmd.Stderr = a.log
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { a.cmd.Process.Kill(); a.cmd.Wait() }()
	waitFor(t, 10*time.Second, "the agent listening", func() bool { return strings.Contains(a.log.String(), "listening on") })
	if !strings.Contains(a.log.String(), "listening on "+defaultListen+",") {
		t.Errorf("agent: %q", a.log.String())
	}
	// Not reachable from the other host.
	r := run(t, h.client("run", "--remote", agentIP+":7471"))
	if r.code == 0 || !strings.Contains(r.stderr, "cannot reach the agent") {
		t.Errorf("reached a loopback agent from another host: exit %d %q", r.code, r.stderr)
	}
}

// startClient starts a long remote run and waits until its first cell's
// data flows on the agent (the agent's log names the cell).
func (h *twoHosts) startClient(t *testing.T, a *agentProc, args ...string) (*exec.Cmd, *testenv.SyncBuffer, *bytes.Buffer) {
	t.Helper()
	cmd := h.client(h.remoteArgs(append(args, "-q")...)...)
	stderr, stdout := &testenv.SyncBuffer{}, &bytes.Buffer{}
	cmd.Stderr, cmd.Stdout = stderr, stdout
	before := strings.Count(a.log.String(), ": receiver ")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, 20*time.Second, "the agent preparing the cell", func() bool { return strings.Count(a.log.String(), ": receiver ") > before })
	return cmd, stderr, stdout
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// waitForRun waits until the agent's n-th run is under way (its side
// released, its programs attached).
func waitForRun(t *testing.T, a *agentProc, n int) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("the agent's run %d", n), func() bool { return strings.Count(a.log.String(), ": running") >= n })
	if !agentHoldsBPF(a) {
		t.Fatal("the agent runs without its programs")
	}
	time.Sleep(300 * time.Millisecond) // data is flowing
}

// sessionsEnded counts the sessions the agent has ended.
func sessionsEnded(a *agentProc) int {
	l := a.log.String()
	return strings.Count(l, ": session ended") + strings.Count(l, ": client gone")
}

// agentHoldsBPF reports whether the agent process holds BPF programs.
func agentHoldsBPF(a *agentProc) bool {
	progs, links := bpfObjects(a.cmd.Process.Pid)
	return len(progs)+len(links) > 0
}

// TestRemotePeerFault: the agent killed (kill -9) or stopped (SIGSTOP,
// as a partition looks) mid-cell is one line on the client within a few
// seconds; the finished cell is printed; nothing is left behind here.
func TestRemotePeerFault(t *testing.T) {
	for _, c := range []struct {
		name  string
		sig   syscall.Signal
		want  string
		limit time.Duration
	}{
		{"killed", syscall.SIGKILL, "send→read 64K ×1: lost the agent at " + peerHostname + " (" + agentListen + ") during the run", 5 * time.Second},
		{"silent", syscall.SIGSTOP, "send→read 64K ×1: the agent at " + peerHostname + " (" + agentListen + ") has been silent for 5s during the run", 10 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newTwoHosts(t)
			a := h.startAgent(t)
			defer a.cmd.Process.Signal(syscall.SIGCONT)
			cmd, stderr, stdout := h.startClient(t, a, "--method", "write,send", "--duration", "2s", "--json")
			waitForRun(t, a, 2)
			at := time.Now()
			a.cmd.Process.Signal(c.sig)
			err := cmd.Wait()
			took := time.Since(at)
			t.Logf("agent %s: the client exited after %v: %s", c.name, took, strings.TrimSpace(stderr.String()))
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if exitCode(err) == 0 || len(lines) != 1 || !strings.Contains(lines[0], c.want) || strings.Contains(lines[0], "; ") {
				t.Errorf("exit %v, stderr %q; want one line containing %q", err, stderr.String(), c.want)
			}
			if took > c.limit {
				t.Errorf("the client took %v to give up", took)
			}
			d := decode(t, stdout.String())
			if len(d.Cells) != 1 || d.Cells[0].Method != "write" || d.Cells[0].Workload.ReceivedBytes == 0 {
				t.Fatalf("want the finished write cell printed, got %+v", d.Cells)
			}
			assertGone(t, d.Backends.ProgramIDs)
			if c.sig == syscall.SIGKILL {
				assertGone(t, d.Cells[0].Receiver.Host.Backends.ProgramIDs)
			}
		})
	}
}

// TestRemoteClientGone: a client's Ctrl-C, and a client killed outright,
// leave the agent clean (its programs released) and ready for the next.
func TestRemoteClientGone(t *testing.T) {
	h := newTwoHosts(t)
	a := h.startAgent(t)
	// SIGSTOP: a client that goes silent (a partition), which the agent
	// finds by its keepalive.
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL, syscall.SIGSTOP} {
		before, ended := strings.Count(a.log.String(), ": running"), sessionsEnded(a)
		cmd, stderr, _ := h.startClient(t, a, "--method", "write", "--duration", "30s")
		waitForRun(t, a, before+1)
		at := time.Now()
		cmd.Process.Signal(sig)
		if sig != syscall.SIGSTOP {
			err := cmd.Wait()
			if sig == syscall.SIGINT {
				lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
				if exitCode(err) == 0 || len(lines) != 1 || !strings.Contains(lines[0], "interrupted") {
					t.Errorf("Ctrl-C: exit %v, stderr %q; want one line", err, stderr.String())
				}
			}
		}
		waitFor(t, 15*time.Second, fmt.Sprintf("the agent releasing its programs after %v", sig), func() bool { return !agentHoldsBPF(a) })
		// The data connection may tell the agent before the control one
		// does: the session ends when the control connection's end arrives.
		waitFor(t, 15*time.Second, fmt.Sprintf("the agent ending the session after %v", sig), func() bool { return sessionsEnded(a) > ended })
		t.Logf("client %v: the agent ended the session after %v", sig, time.Since(at))
		if sig == syscall.SIGSTOP {
			cmd.Process.Kill()
			cmd.Wait()
		}
		r := run(t, h.client(h.remoteArgs("--method", "write", "--bytes", "4M", "--backend", "none", "--json", "-q")...))
		if r.code != 0 {
			t.Fatalf("the next client after %v: exit %d: %s\nagent: %s", sig, r.code, r.stderr, a.log.String())
		}
	}
	if !strings.Contains(a.log.String(), "client gone (its connection closed, or it left keepalive pings unanswered") {
		t.Errorf("the agent's log does not say the silent client is gone:\n%s", a.log.String())
	}
}

// TestRemoteNoScatterGather: MSG_ZEROCOPY out of a device with
// scatter-gather off. TCP still pins the pages (software GSO gives the
// route SG), then segmentation in software copies every pinned byte into
// linear segments at transmit; the kernel flags only some completions
// COPIED (the skbs linearized whole). zcprof must say the bytes were
// copied, and why.
func TestRemoteNoScatterGather(t *testing.T) {
	h := newTwoHosts(t)
	if _, err := exec.LookPath("ethtool"); err != nil {
		t.Fatal("ethtool is not installed (apt-get install ethtool): it turns scatter-gather off for this test")
	}
	if out, err := exec.Command("nsenter", "--net="+h.pair.Sender.Path(), "ethtool", "-K", "zc-tx", "sg", "off").CombinedOutput(); err != nil {
		t.Fatalf("ethtool -K zc-tx sg off: %v: %s", err, out)
	}
	h.startAgent(t)
	r := run(t, h.client(h.remoteArgs("--method", "msg_zerocopy,write", "--bytes", "64M", "--backend", "none", "--json", "-q")...))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	d := decode(t, r.stdout)
	c := d.Cells[0]
	zc, w := c.Sender.Zerocopy, c.Workload
	t.Logf("msg_zerocopy: %d of %d completions COPIED; zerocopy %+v; verdicts %q", w.ZCCopied, w.ZCCompletions, zc, c.Verdicts)
	if c.Method != "msg_zerocopy" || w.TxDevice != "zc-tx" || !w.TxDeviceNoSG || w.ReceivedBytes != 64<<20 {
		t.Fatalf("cell %s: device %q, no sg %v, %d bytes", c.Method, w.TxDevice, w.TxDeviceNoSG, w.ReceivedBytes)
	}
	// The kernel's own flag is wrong here: some completions are not COPIED.
	if w.ZCCompletions == 0 || w.ZCCopied >= w.ZCCompletions {
		t.Logf("the kernel flagged %d of %d completions COPIED: the partial flag this test is about did not occur", w.ZCCopied, w.ZCCompletions)
	}
	if zc == nil || zc.TxPinnedBytes != 64<<20 || zc.TxDeferredCopyBytes != zc.TxPinnedBytes ||
		!strings.Contains(zc.Verdict, "copied at transmit: zc-tx has scatter-gather off") {
		t.Errorf("sender zerocopy %+v: want every pinned byte copied, and why", zc)
	}
	want := "msg_zerocopy: every pinned byte was copied at transmit: zc-tx has scatter-gather off"
	if len(c.Verdicts) == 0 || !strings.HasPrefix(c.Verdicts[0], want) {
		t.Errorf("verdicts %q, want %q first", c.Verdicts, want)
	}
	// write through the same device: nothing pinned, nothing to correct.
	if wc := d.Cells[1]; wc.Sender.Zerocopy != nil && wc.Sender.Zerocopy.TxDeferredCopyBytes != 0 {
		t.Errorf("write: %+v", wc.Sender.Zerocopy)
	}
}
