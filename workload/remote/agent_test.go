package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/zcprof/zcprof/profiler/testenv"
	"github.com/zcprof/zcprof/workload"
	"github.com/zcprof/zcprof/workload/remote/pb"
	"github.com/zcprof/zcprof/workload/run"
)

const testToken = "0123456789abcdef0123456789abcdef"

// testAgent serves on a loopback port until the test ends; config dirs
// are the test's own.
func testAgent(t *testing.T, token []byte) (addr string, log *testenv.SyncBuffer) {
	t.Helper()
	return testAgentWith(t, token, DefaultLimits())
}

func testAgentWith(t *testing.T, token []byte, lim Limits) (addr string, log *testenv.SyncBuffer) {
	t.Helper()
	return testAgentOpts(t, AgentOptions{Limits: lim, Token: token})
}

func testAgentOpts(t *testing.T, o AgentOptions) (addr string, log *testenv.SyncBuffer) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	log = &testenv.SyncBuffer{}
	o.Software, o.Log = "test", log
	a, err := NewAgent(o)
	if err != nil {
		t.Fatal(err)
	}
	cert, _, err := AgentCertificate()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.ServeTCP(ctx, ln, cert) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeTCP: %v", err)
		}
	})
	return ln.Addr().String(), log
}

func dial(t *testing.T, addr string, token string) (*Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var tok []byte
	if token != "" {
		tok = []byte(token)
	}
	return Dial(ctx, ClientOptions{Addr: addr, Token: tok, Software: "test"})
}

// mustDial retries while the agent still holds the last session's slot
// (it is freed when that stream's end reaches it).
func mustDial(t *testing.T, addr, token string) *Client {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := dial(t, addr, token)
		if err == nil {
			return c
		}
		if !strings.Contains(err.Error(), "busy") || time.Now().After(deadline) {
			t.Fatalf("dial: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestHelloAndToken(t *testing.T) {
	addr, log := testAgent(t, []byte(testToken))
	c := mustDial(t, addr, testToken)
	name, kernel := c.Host()
	if host, _ := os.Hostname(); name != host || kernel == "" {
		t.Errorf("host %q %q", name, kernel)
	}
	if err := c.CheckMethods([]string{"write", "sendfile"}, true); err != nil {
		t.Error(err)
	}
	if err := c.CheckMethods([]string{"carrier-pigeon"}, false); err == nil || !strings.Contains(err.Error(), `does not allow method "carrier-pigeon" (not in its --methods)`) {
		t.Errorf("unknown method: %v", err)
	}
	c.Close()

	start := time.Now()
	_, err := dial(t, addr, "fedcba9876543210fedcba9876543210")
	if err == nil || !strings.Contains(err.Error(), "authentication failed: wrong token") || strings.Contains(err.Error(), "\n") {
		t.Errorf("wrong token: %v", err)
	}
	if d := time.Since(start); d < AuthFailDelay {
		t.Errorf("a wrong token was answered after %v, want at least %v", d, AuthFailDelay)
	}
	if _, err := dial(t, addr, ""); err == nil || !strings.Contains(err.Error(), "requires a token: give --token-file") {
		t.Errorf("no token: %v", err)
	}
	// The agent is still there for the right token.
	mustDial(t, addr, testToken).Close()
	if !strings.Contains(log.String(), "authentication failed") {
		t.Errorf("agent log: %q", log.String())
	}
	// Before the token is proved the agent says only that it wants one,
	// not which host or kernel it is.
	s, done := rawSession(t, addr)
	defer done()
	if err := s.Send(hello(Version)); err != nil {
		t.Fatal(err)
	}
	r, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if w := r.GetWelcome(); w == nil || !w.AuthRequired || w.Hostname != "" || w.Kernel != "" {
		t.Errorf("welcome before the token: %v, want auth required and no host", r)
	}
}

// The token never crosses the connection: a proof is bound to both
// nonces and to its direction.
func TestProof(t *testing.T) {
	tok := []byte(testToken)
	s, c := bytes.Repeat([]byte{1}, nonceLen), bytes.Repeat([]byte{2}, nonceLen)
	p := proof(tok, byClient, s, c)
	if bytes.Contains(p, tok) || !validProof(tok, byClient, s, c, p) {
		t.Fatal("proof")
	}
	for _, bad := range [][]byte{proof(tok, byAgent, s, c), proof(tok, byClient, c, s), proof([]byte("other token, long enough"), byClient, s, c), p[:16], nil} {
		if validProof(tok, byClient, s, c, bad) {
			t.Errorf("accepted %x", bad)
		}
	}
}

func TestBusy(t *testing.T) {
	addr, _ := testAgent(t, nil)
	a := mustDial(t, addr, "")
	_, err := dial(t, addr, "")
	if err == nil || !strings.Contains(err.Error(), "is busy: another client (127.0.0.1:") {
		t.Errorf("second client: %v", err)
	}
	a.Close()
	mustDial(t, addr, "").Close()
}

// A client that stays connected but asks nothing is let go after the
// idle limit, told why, and the next client gets the agent.
func TestIdleClientIsLetGo(t *testing.T) {
	addr, log := testAgentOpts(t, AgentOptions{Limits: DefaultLimits(), Idle: 300 * time.Millisecond})
	a := mustDial(t, addr, "")
	defer a.Close()
	if _, err := dial(t, addr, ""); err == nil || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("second client while the first is within its idle limit: %v, want busy", err)
	}
	const want = "no request for 300ms: the client is let go, its side released"
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(log.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("agent log %q lacks %q", log.String(), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mustDial(t, addr, "").Close()
}

// rawSession opens a session stream without the client's handshake.
func rawSession(t *testing.T, addr string, opts ...grpc.CallOption) (pb.Agent_SessionClient, func()) {
	t.Helper()
	creds := credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := pb.NewAgentClient(conn).Session(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s, func() { cancel(); conn.Close() }
}

func hello(version uint32) *pb.Request {
	n := bytes.Repeat([]byte{7}, nonceLen)
	return &pb.Request{Msg: &pb.Request_Hello{Hello: &pb.Hello{Version: version, Software: "raw", ClientNonce: n}}}
}

func TestVersionMismatch(t *testing.T) {
	addr, log := testAgent(t, nil)
	s, done := rawSession(t, addr)
	defer done()
	if err := s.Send(hello(Version + 1)); err != nil {
		t.Fatal(err)
	}
	r, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("version mismatch: the client (zcprof raw) speaks protocol %d, this agent (zcprof test) %d", Version+1, Version)
	if f := r.GetFailure(); f == nil || f.Message != want {
		t.Errorf("reply %v, want failure %q", r, want)
	}
	if _, err := s.Recv(); err != io.EOF {
		t.Errorf("after the mismatch: %v, want the end of the session", err)
	}
	if !strings.Contains(log.String(), want+"\n") {
		t.Errorf("agent log %q lacks the line", log.String())
	}
}

// Fields this version does not know are refused, not ignored.
func TestStrictDecoding(t *testing.T) {
	addr, _ := testAgent(t, nil)
	s, done := rawSession(t, addr)
	defer done()
	h := hello(Version)
	h.GetHello().ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1))
	if err := s.Send(h); err != nil {
		t.Fatal(err)
	}
	r, err := s.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if f := r.GetFailure(); f == nil || f.Message != "request has fields this agent does not know" {
		t.Errorf("reply %v", r)
	}
}

func TestOversizedMessage(t *testing.T) {
	addr, _ := testAgent(t, nil)
	s, done := rawSession(t, addr, grpc.MaxCallSendMsgSize(8<<20))
	defer done()
	h := hello(Version)
	h.GetHello().Software = strings.Repeat("x", 1<<20)
	s.Send(h)
	_, err := s.Recv()
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("1 MiB hello: %v, want ResourceExhausted", err)
	}
	mustDial(t, addr, "").Close()
}

// The agent survives garbage, an absurd length prefix, a silent
// connection and a client that vanishes mid-handshake, and serves the
// next client after each.
func TestHostileConnections(t *testing.T) {
	addr, _ := testAgent(t, []byte(testToken))

	t.Run("garbage", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		junk := make([]byte, 64<<10)
		rand.Read(junk)
		conn.Write(junk)
		conn.Close()
		mustDial(t, addr, testToken).Close()
	})

	t.Run("absurd length prefix", func(t *testing.T) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, http2.ClientPreface)
		fr := http2.NewFramer(conn, conn)
		fr.WriteSettings()
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":path", "/zcprof.remote.v1.Agent/Session"},
			{":authority", addr}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true})
		// A gRPC message claiming 4 GiB - 1 bytes, and 3 of them.
		fr.WriteData(1, false, []byte{0, 0xff, 0xff, 0xff, 0xff, 1, 2, 3})
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		got := ""
		for got == "" {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("no answer to the length prefix: %v", err)
			}
			switch f := f.(type) {
			case *http2.HeadersFrame:
				fields, _ := hpack.NewDecoder(4096, nil).DecodeFull(f.HeaderBlockFragment())
				for _, hf := range fields {
					if hf.Name == "grpc-status" {
						got = hf.Value
					}
				}
			case *http2.RSTStreamFrame:
				got = "reset " + f.ErrCode.String()
			}
		}
		if got != "8" { // RESOURCE_EXHAUSTED
			t.Errorf("the agent answered %q, want grpc-status 8", got)
		}
		mustDial(t, addr, testToken).Close()
	})

	t.Run("silent connection", func(t *testing.T) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		mustDial(t, addr, testToken).Close() // served beside it
		conn.SetReadDeadline(time.Now().Add(HandshakeTimeout + 5*time.Second))
		if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("a connection silent for its handshake: %v, want dropped by the agent", err)
		}
	})

	t.Run("vanishes mid-handshake", func(t *testing.T) {
		s, done := rawSession(t, addr)
		if err := s.Send(hello(Version)); err != nil {
			t.Fatal(err)
		}
		r, err := s.Recv()
		if err != nil || r.GetWelcome() == nil || !r.GetWelcome().AuthRequired {
			t.Fatalf("welcome: %v %v", r, err)
		}
		done() // no Auth: gone
		mustDial(t, addr, testToken).Close()
	})
}

func TestPins(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	addr, _ := testAgent(t, nil)
	c := mustDial(t, addr, "")
	c.Close()
	b, err := os.ReadFile(filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "zcprof", knownAgentsFile))
	if err != nil || !strings.HasPrefix(string(b), addr+" ") {
		t.Fatalf("known agents: %q %v", b, err)
	}
	_, fp, err := AgentCertificate()
	if err != nil || !strings.Contains(string(b), fp) {
		t.Fatalf("pinned %q, agent has %s (%v)", b, fp, err)
	}
	// Another certificate at the same address is refused in one line.
	os.WriteFile(filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "zcprof", knownAgentsFile), []byte(addr+" "+strings.Repeat("ab", 32)+"\n"), 0o600)
	_, err = dial(t, addr, "")
	if err == nil || !strings.Contains(err.Error(), "pinned "+strings.Repeat("ab", 32)) || strings.Contains(err.Error(), "\n") {
		t.Errorf("changed certificate: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err = Dial(ctx, ClientOptions{Addr: addr, Fingerprint: fp, Software: "test"})
	if err != nil {
		t.Fatalf("--fingerprint: %v", err)
	}
	c.Close()
}

// The agent refuses a run past its own limits, whatever the client's
// options said, and says which limit in one line.
func TestAgentLimits(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxTotalBytes, lim.MaxDuration = 1<<20, 2*time.Second
	addr, _ := testAgentWith(t, nil, lim)
	c := mustDial(t, addr, "")
	defer c.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		cfg  workload.Config
		want string
	}{
		{workload.Config{Method: "write", Size: 65536, Streams: 1, Bytes: 2 << 20, SenderCPU: -1, ReceiverCPU: -1}, "this agent allows 1048576 in all"},
		{workload.Config{Method: "write", Size: 65536, Streams: 1, Duration: 5 * time.Second, SenderCPU: -1, ReceiverCPU: -1}, "duration 5s: this agent allows at most 2s"},
	} {
		sd, _ := c.NewSide(workload.RoleReceiver, run.SideOptions{})
		_, err := sd.Prepare(ctx, tc.cfg, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want one line containing %q", tc.cfg, err, tc.want)
		}
		if err := sd.Close(); err != nil {
			t.Errorf("close after a refusal: %v", err)
		}
	}
}
