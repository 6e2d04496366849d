package remote

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/zcprof/zcprof/workload"
	"github.com/zcprof/zcprof/workload/remote/pb"
	"github.com/zcprof/zcprof/workload/run"
)

// Deadlines of the client's requests.
const (
	prepareTimeout = 60 * time.Second // the agent's setup: streams, payload file
	startTimeout   = 90 * time.Second // the agent's BPF load and attach
	finishTimeout  = 60 * time.Second
	closeTimeout   = 30 * time.Second
)

// ClientOptions configure `zcprof run --remote`.
type ClientOptions struct {
	// Addr is host:port (TLS over TCP) or ssh://[user@]host[:port] (the
	// agent started as `zcprof serve --stdio` through the system's ssh).
	Addr        string
	Token       []byte // for an agent that asks for one
	Fingerprint string // pin the agent's certificate (TCP); "": pin on first use
	Software    string // zcprof's version, told in the hello
	// Note, if set, gets one-line notes (a fingerprint pinned on first use).
	Note func(string)
}

// SSHCommand is the ssh program the ssh:// form runs: $ZCPROF_SSH if set
// (like GIT_SSH), else ssh from PATH.
func SSHCommand() string {
	if s := os.Getenv("ZCPROF_SSH"); s != "" {
		return s
	}
	return "ssh"
}

// Client is one session with an agent; it is the run.Peer of a two-host
// run.
type Client struct {
	o       ClientOptions
	conn    *grpc.ClientConn
	cancel  context.CancelFunc
	stream  pb.Agent_SessionClient
	replies chan *pb.Reply
	recvErr error         // set before replies closes
	done    chan struct{} // closed when the stream ended
	sendMu  sync.Mutex

	welcome     *pb.Welcome
	local, peer netip.Addr
	name        string // how messages name the agent: host (addr)
	ssh         *exec.Cmd
	sshErr      *bytes.Buffer
	sshDone     chan struct{} // closed when ssh exited
	pinErr      error
	closing     chan struct{} // closed by Close
	// broken: the connection was lost or the agent stopped answering;
	// closing asks it nothing more (it releases its side itself when the
	// session ends, by the stream's end or the keepalive).
	broken atomic.Bool
}

// Dial connects, says hello, and authenticates when the agent asks.
func Dial(ctx context.Context, o ClientOptions) (*Client, error) {
	c := &Client{o: o, name: o.Addr}
	var err error
	var dialer func(context.Context, string) (net.Conn, error)
	var creds credentials.TransportCredentials
	var target string
	if strings.HasPrefix(o.Addr, "ssh://") {
		// The data addresses come with the agent's welcome.
		if _, dialer, err = c.sshDialer(o.Addr); err != nil {
			return nil, err
		}
		creds, target = insecure.NewCredentials(), "passthrough:///ssh"
	} else {
		host, _, err := net.SplitHostPort(o.Addr)
		if err != nil {
			return nil, fmt.Errorf("--remote %q: want host:port or ssh://[user@]host[:port]", o.Addr)
		}
		if c.peer, c.local, err = routeTo(ctx, host); err != nil {
			return nil, err
		}
		creds, err = c.tlsCreds()
		if err != nil {
			return nil, err
		}
		target = "passthrough:///" + o.Addr
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxReply), grpc.MaxCallSendMsgSize(MaxRequest)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: KeepaliveEvery, Timeout: KeepaliveTimeout, PermitWithoutStream: true}),
	}
	if dialer != nil {
		opts = append(opts, grpc.WithContextDialer(dialer))
	}
	if c.conn, err = grpc.NewClient(target, opts...); err != nil {
		c.Close()
		return nil, fmt.Errorf("--remote %s: %v", o.Addr, err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.closing = make(chan struct{})
	if c.stream, err = pb.NewAgentClient(c.conn).Session(sctx); err != nil {
		c.Close()
		return nil, c.lost("connect", err)
	}
	c.replies, c.done = make(chan *pb.Reply), make(chan struct{})
	go c.receive()
	if err := c.handshake(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// routeTo resolves host to an address (IPv4 or IPv6, the resolver's
// first choice, as the control connection dials it) and finds this host's
// address on the way there.
func routeTo(ctx context.Context, host string) (peer, local netip.Addr, err error) {
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return peer, local, fmt.Errorf("--remote: cannot resolve %q: %v", host, err)
	}
	peer = ips[0].Unmap()
	// A connected UDP socket sends nothing; it only picks the route.
	u, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(peer, 9)))
	if err != nil {
		return peer, local, fmt.Errorf("--remote: no route to %s: %v", peer, err)
	}
	defer u.Close()
	local = u.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
	return peer, local, nil
}

// tlsCreds pins the agent's self-signed certificate: by --fingerprint, or
// to the one seen on first use (stored under the user's config dir).
func (c *Client) tlsCreds() (credentials.TransportCredentials, error) {
	want := ""
	if c.o.Fingerprint != "" {
		var err error
		if want, err = normFingerprint(c.o.Fingerprint); err != nil {
			return nil, err
		}
	}
	store, err := openPins()
	if err != nil {
		return nil, err
	}
	verify := func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("no certificate")
		}
		got := Fingerprint(raw[0])
		if want != "" {
			if got != want {
				c.pinErr = fmt.Errorf("the agent at %s has certificate sha256 %s, not the --fingerprint given", c.o.Addr, got)
				return c.pinErr
			}
			return nil
		}
		pinned, err := store.lookup(c.o.Addr)
		if err != nil {
			c.pinErr = err
			return err
		}
		switch {
		case pinned == "":
			if err := store.add(c.o.Addr, got); err != nil {
				c.pinErr = err
				return err
			}
			if c.o.Note != nil {
				c.o.Note(fmt.Sprintf("pinned the agent at %s on first use: certificate sha256 %s (in %s)", c.o.Addr, got, store.path))
			}
		case pinned != got:
			c.pinErr = fmt.Errorf("the agent at %s has certificate sha256 %s, but %s pinned %s: if the agent was reinstalled, remove that line (or pass --fingerprint)", c.o.Addr, got, store.path, pinned)
			return c.pinErr
		}
		return nil
	}
	// The chain is not verified against any CA: the pin is the check.
	return credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, VerifyPeerCertificate: verify, MinVersion: tls.VersionTLS13}), nil
}

// sshDialer parses ssh://[user@]host[:port] and returns a dialer that
// starts `ssh [-p port] [user@]host zcprof serve --stdio` once and talks
// over its stdin and stdout.
func (c *Client) sshDialer(addr string) (string, func(context.Context, string) (net.Conn, error), error) {
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" || u.Path != "" || u.RawQuery != "" {
		return "", nil, fmt.Errorf("--remote %q: want ssh://[user@]host[:port]", addr)
	}
	host := u.Hostname()
	if strings.HasPrefix(host, "-") {
		return "", nil, fmt.Errorf("--remote %q: bad host", addr)
	}
	args := []string{"-o", "BatchMode=yes"}
	if u.Port() != "" {
		args = append(args, "-p", u.Port())
	}
	dest := host
	if u.User != nil {
		if strings.HasPrefix(u.User.Username(), "-") {
			return "", nil, fmt.Errorf("--remote %q: bad user", addr)
		}
		dest = u.User.Username() + "@" + host
	}
	args = append(args, "--", dest, "zcprof", "serve", "--stdio")
	var once sync.Once
	dial := func(context.Context, string) (net.Conn, error) {
		var conn net.Conn
		err := errors.New("the ssh connection ended")
		once.Do(func() {
			cmd := exec.Command(SSHCommand(), args...)
			c.sshErr = &bytes.Buffer{}
			cmd.Stderr = c.sshErr
			w, e := cmd.StdinPipe()
			if e != nil {
				err = e
				return
			}
			r, e := cmd.StdoutPipe()
			if e != nil {
				err = e
				return
			}
			if e := cmd.Start(); e != nil {
				err = fmt.Errorf("%s: %v", SSHCommand(), e)
				return
			}
			c.ssh, c.sshDone = cmd, make(chan struct{})
			go func() { cmd.Wait(); close(c.sshDone) }()
			conn, err = newPipeConn(r, w, nil), nil
		})
		return conn, err
	}
	c.name = host
	return host, dial, nil
}

// streamErr is why the stream ended (after done is closed).
func (c *Client) streamErr() error {
	if c.recvErr == nil || c.recvErr == io.EOF {
		return status.Error(codes.Unavailable, "the connection closed")
	}
	return c.recvErr
}

func (c *Client) receive() {
	defer close(c.done)
	defer close(c.replies)
	for {
		r, err := c.stream.Recv()
		if err != nil {
			c.recvErr = err
			return
		}
		select {
		case c.replies <- r:
		case <-c.closing:
			return
		}
	}
}

func (c *Client) send(r *pb.Request) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if err := c.stream.Send(r); err != nil {
		if err == io.EOF {
			// The real error comes with Recv.
			return nil
		}
		return err
	}
	return nil
}

// lost words a failed connection in one line.
func (c *Client) lost(during string, err error) error {
	c.broken.Store(true)
	if c.pinErr != nil {
		return c.pinErr
	}
	if st, ok := status.FromError(err); ok {
		switch {
		case st.Code() == codes.ResourceExhausted && strings.HasPrefix(st.Message(), "busy"):
			return fmt.Errorf("the agent at %s is %s", c.name, st.Message())
		case st.Code() == codes.ResourceExhausted:
			return fmt.Errorf("the agent at %s refused a message: %s", c.name, st.Message())
		case st.Code() == codes.Unavailable:
			msg := st.Message()
			if c.sshDone != nil {
				// ssh's own words (unknown host, refused key) once it exited.
				select {
				case <-c.sshDone:
				case <-time.After(2 * time.Second):
				}
			}
			if c.sshDone != nil && c.sshErr.Len() > 0 {
				msg = strings.TrimSpace(lastLine(c.sshErr.String()))
			}
			if during == "connect" || during == "hello" {
				return fmt.Errorf("cannot reach the agent at %s: %s", c.name, msg)
			}
			return fmt.Errorf("lost the agent at %s during %s: %s", c.name, during, msg)
		}
		return fmt.Errorf("the agent at %s during %s: %s", c.name, during, st.Message())
	}
	return fmt.Errorf("the agent at %s during %s: %v", c.name, during, err)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// await waits for the reply to a request. Heartbeats keep it waiting
// (each resets the silence limit); a Failure is the agent's one line.
func (c *Client) await(ctx context.Context, during string, timeout time.Duration, onBeat func(*pb.Reply) bool) (*pb.Reply, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case r, ok := <-c.replies:
			if !ok {
				return nil, c.lost(during, c.streamErr())
			}
			if onBeat != nil && onBeat(r) {
				t.Reset(timeout)
				continue
			}
			if f := r.GetFailure(); f != nil {
				return nil, fmt.Errorf("the agent at %s: %s", c.name, f.Message)
			}
			return r, nil
		case <-t.C:
			// Nothing more is asked of an agent that stopped answering.
			c.broken.Store(true)
			if onBeat != nil {
				return nil, fmt.Errorf("the agent at %s has been silent for %v during %s (stopped, or the network is partitioned)", c.name, timeout, during)
			}
			return nil, fmt.Errorf("the agent at %s did not answer %s within %v", c.name, during, timeout)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (c *Client) handshake(ctx context.Context) error {
	cn, err := nonce()
	if err != nil {
		return err
	}
	if err := c.send(&pb.Request{Msg: &pb.Request_Hello{Hello: &pb.Hello{Version: Version, Software: c.o.Software, ClientNonce: cn}}}); err != nil {
		return c.lost("hello", err)
	}
	r, err := c.await(ctx, "hello", HandshakeTimeout, nil)
	if err != nil {
		return err
	}
	w := r.GetWelcome()
	switch {
	case w == nil:
		return fmt.Errorf("the agent at %s: protocol error: no welcome", c.name)
	case w.Version != Version:
		return fmt.Errorf("version mismatch: this client (zcprof %s) speaks protocol %d, the agent at %s (zcprof %s) %d", c.o.Software, Version, c.name, clip(w.Software), w.Version)
	case len(w.ServerNonce) != nonceLen:
		return fmt.Errorf("the agent at %s: protocol error: bad nonce", c.name)
	}
	c.welcome = w
	c.nameHost()
	if c.ssh != nil {
		ip, err := netip.ParseAddr(w.DataAddr)
		if err != nil {
			return fmt.Errorf("the agent at %s has no data address (sshd gave it none in SSH_CONNECTION)", c.name)
		}
		if c.peer, c.local, err = routeTo(ctx, ip.String()); err != nil {
			return err
		}
	}
	if !w.AuthRequired {
		return nil
	}
	if c.o.Token == nil {
		return fmt.Errorf("the agent at %s requires a token: give --token-file", c.name)
	}
	mac := proof(c.o.Token, byClient, w.ServerNonce, cn)
	if err := c.send(&pb.Request{Msg: &pb.Request_Auth{Auth: &pb.Auth{Mac: mac}}}); err != nil {
		return c.lost("authentication", err)
	}
	r, err = c.await(ctx, "authentication", HandshakeTimeout, nil)
	if err != nil {
		return err
	}
	ok := r.GetAuthOk()
	if ok == nil || !validProof(c.o.Token, byAgent, w.ServerNonce, cn, ok.Mac) {
		return fmt.Errorf("the agent at %s did not prove it holds the same token", c.name)
	}
	w.Hostname, w.Kernel = ok.Hostname, ok.Kernel
	c.nameHost()
	return nil
}

// nameHost names the agent by its host, once it has said it.
func (c *Client) nameHost() {
	if h := c.welcome.Hostname; h != "" {
		c.name = fmt.Sprintf("%s (%s)", clip(h), strings.TrimPrefix(c.o.Addr, "ssh://"))
	}
}

// Host is the agent's host name and kernel, as it said in its welcome, or
// after authentication when it requires a token.
func (c *Client) Host() (name, kernel string) { return c.welcome.Hostname, c.welcome.Kernel }

// Addrs implements run.Peer.
func (c *Client) Addrs() (local, peer netip.Addr) { return c.local, c.peer }

// CheckMethods says in one line which of methods the agent does not allow
// (its --methods) or, when it is the sender (reverse), cannot send with on
// its kernel.
func (c *Client) CheckMethods(methods []string, reverse bool) error {
	for _, m := range methods {
		if !slices.Contains(c.welcome.Capabilities, methodCap+m) {
			return fmt.Errorf("the agent at %s does not allow method %q (not in its --methods)", c.name, m)
		}
		if err := c.CanSend(m); reverse && err != nil {
			return err
		}
	}
	return nil
}

// CanSend says why the agent's kernel cannot send with method, or nil.
func (c *Client) CanSend(method string) error {
	for _, cp := range c.welcome.Capabilities {
		if why, ok := strings.CutPrefix(cp, unavailableCap+method+":"); ok {
			return fmt.Errorf("the agent at %s cannot send with %q: %s", c.name, method, clipLine(why))
		}
	}
	return nil
}

// NewSide implements run.Peer: the agent's side for one run.
func (c *Client) NewSide(role workload.Role, o run.SideOptions) (run.Side, error) {
	return &remoteSide{c: c, role: role, o: o}, nil
}

// Close ends the session; the agent releases what is left.
func (c *Client) Close() error {
	if c.done != nil && !c.broken.Load() {
		// End the session in order: the agent sees the end of the
		// stream and releases what is left before it ends it too.
		c.sendMu.Lock()
		c.stream.CloseSend()
		c.sendMu.Unlock()
		timeout := time.After(closeTimeout)
	drain:
		for {
			select {
			case _, ok := <-c.replies:
				if !ok {
					break drain
				}
			case <-timeout:
				break drain
			}
		}
	}
	if c.cancel != nil {
		c.cancel()
		close(c.closing)
	}
	var err error
	if c.conn != nil {
		err = c.conn.Close()
	}
	if c.ssh != nil {
		select {
		case <-c.sshDone:
		case <-time.After(closeTimeout):
			c.ssh.Process.Kill()
			<-c.sshDone
		}
	}
	return err
}

// remoteSide is the agent's side of one run of a cell.
type remoteSide struct {
	c    *Client
	role workload.Role
	o    run.SideOptions
	open bool
}

func (s *remoteSide) Roles() []workload.Role { return []workload.Role{s.role} }

func (s *remoteSide) call(ctx context.Context, during string, req *pb.Request, timeout time.Duration) (*pb.Reply, error) {
	if err := s.c.send(req); err != nil {
		return nil, s.c.lost(during, err)
	}
	return s.c.await(ctx, during, timeout, nil)
}

func (s *remoteSide) Prepare(ctx context.Context, cfg workload.Config, peerPorts []int) ([]int, error) {
	p := &pb.Prepare{
		Role: string(s.role), Method: cfg.Method, RxMethod: cfg.RxMethod, Size: uint32(cfg.Size), Streams: uint32(cfg.Streams),
		DurationNs: uint64(cfg.Duration), Bytes: uint64(cfg.Bytes), Cpu: int32(cfg.ReceiverCPU),
		Congestion: cfg.Congestion, Mss: uint32(cfg.MSS), ColdCache: cfg.ColdCache, Accounting: s.o.Backend, ByteClasses: s.o.ByteClasses, Threads: s.o.Threads,
	}
	if s.role == workload.RoleSender {
		p.Cpu = int32(cfg.SenderCPU)
	}
	if a := s.o.Attribution; a != nil {
		p.Attribution, p.SampleHz = a.Backend, uint32(a.SampleHz)
	}
	for _, port := range peerPorts {
		p.PeerPorts = append(p.PeerPorts, uint32(port))
	}
	s.open = true
	r, err := s.call(ctx, "prepare", &pb.Request{Msg: &pb.Request_Prepare{Prepare: p}}, prepareTimeout)
	if err != nil {
		return nil, err
	}
	got := r.GetPrepared()
	if got == nil {
		return nil, fmt.Errorf("the agent at %s: protocol error: no prepared", s.c.name)
	}
	if s.role == workload.RoleSender {
		return nil, nil
	}
	if len(got.Ports) != cfg.Streams {
		return nil, fmt.Errorf("the agent at %s listens on %d ports for %d streams", s.c.name, len(got.Ports), cfg.Streams)
	}
	ports := make([]int, len(got.Ports))
	for i, p := range got.Ports {
		if p == 0 || p > 65535 {
			return nil, fmt.Errorf("the agent at %s: port %d out of range", s.c.name, p)
		}
		ports[i] = int(p)
	}
	return ports, nil
}

func (s *remoteSide) Start(ctx context.Context) error {
	r, err := s.call(ctx, "start", &pb.Request{Msg: &pb.Request_Start{Start: &pb.Start{}}}, startTimeout)
	if err == nil && r.GetStarted() == nil {
		err = fmt.Errorf("the agent at %s: protocol error: no started", s.c.name)
	}
	return err
}

func (s *remoteSide) Run(ctx context.Context, released func()) error {
	if err := s.c.send(&pb.Request{Msg: &pb.Request_Run{Run: &pb.Run{}}}); err != nil {
		return s.c.lost("the run", err)
	}
	var once sync.Once // an agent that says it twice is not believed twice
	beat := func(r *pb.Reply) bool {
		switch {
		case r.GetHeartbeat() != nil:
			return true
		case r.GetReleased() != nil:
			once.Do(released)
			return true
		}
		return false
	}
	r, err := s.c.await(ctx, "the run", SilenceLimit, beat)
	if err != nil && ctx.Err() != nil {
		// Stopped because the other side failed: when the agent died,
		// its data connections reset before its control one closed,
		// and losing the agent is the cause to report.
		select {
		case <-s.c.done:
			return s.c.lost("the run", s.c.streamErr())
		case <-time.After(time.Second):
		}
	}
	if err != nil {
		return err
	}
	if r.GetRunDone() == nil {
		return fmt.Errorf("the agent at %s: protocol error: no run done", s.c.name)
	}
	return nil
}

func (s *remoteSide) Finish(ctx context.Context) (run.SideResult, error) {
	var res run.SideResult
	r, err := s.call(ctx, "finish", &pb.Request{Msg: &pb.Request_Finish{Finish: &pb.Finish{}}}, finishTimeout)
	if err != nil {
		return res, err
	}
	f := r.GetFinished()
	if f == nil {
		return res, fmt.Errorf("the agent at %s: protocol error: no finished", s.c.name)
	}
	dec := json.NewDecoder(bytes.NewReader(f.Side))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		return res, fmt.Errorf("the agent at %s sent a result this client cannot read: %v", s.c.name, err)
	}
	entry := res.Sender
	if s.role == workload.RoleReceiver {
		entry = res.Receiver
	}
	if entry == nil || res.Doc == nil || (s.role == workload.RoleSender) == (res.Sender == nil) || (s.role == workload.RoleReceiver) == (res.Receiver == nil) {
		return res, fmt.Errorf("the agent at %s sent a result without its %s entry", s.c.name, s.role)
	}
	return res, nil
}

// Close releases the agent's side; after a lost connection there is
// nothing to ask (the agent releases everything when the session ends).
func (s *remoteSide) Close() error {
	if !s.open {
		return nil
	}
	s.open = false
	if s.c.broken.Load() {
		return nil
	}
	select {
	case <-s.c.done:
		return nil
	default:
	}
	if err := s.c.send(&pb.Request{Msg: &pb.Request_Close{Close: &pb.Close{}}}); err != nil {
		return s.c.lost("close", err)
	}
	// What a cancelled run still sends comes before the Closed.
	skip := func(r *pb.Reply) bool { return r.GetClosed() == nil }
	_, err := s.c.await(context.Background(), "close", closeTimeout, skip)
	if s.c.broken.Load() {
		// Lost on the way: the agent's side ended with its session,
		// and what went wrong was said where it happened.
		return nil
	}
	return err
}
