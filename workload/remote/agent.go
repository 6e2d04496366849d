package remote

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/workload"
	"github.com/zcprof/zcprof/workload/remote/pb"
	"github.com/zcprof/zcprof/workload/run"
)

// Timing of the conversation, both ends.
const (
	HandshakeTimeout = 10 * time.Second // hello and auth, from the stream's start
	heartbeatEvery   = time.Second      // the agent's beat while a run goes on
	SilenceLimit     = 5 * time.Second  // a peer silent this long is lost
	KeepaliveEvery   = 2 * time.Second  // gRPC pings when the connection is idle
	KeepaliveTimeout = 3 * time.Second
	// IdleLimit is the longest an agent waits for a client's next request
	// between runs: a client that keeps its connection but asks nothing
	// cannot hold the agent's one slot for ever.
	IdleLimit = 5 * time.Minute
	// runGrace is what a run may take beyond its duration (draining,
	// zero-copy completions), and a --bytes run beyond --max-duration.
	runGrace = 30 * time.Second
)

// AgentOptions configure `zcprof serve`.
type AgentOptions struct {
	Limits    Limits
	Token     []byte // nil: no authentication (loopback or ssh only)
	DataPorts workload.PortRange
	Software  string        // zcprof's version, told in the hello
	Log       io.Writer     // one line per session event
	Idle      time.Duration // 0: IdleLimit
}

// Agent serves one client session at a time.
type Agent struct {
	pb.UnimplementedAgentServer
	o AgentOptions

	mu     sync.Mutex
	holder string // the client whose session runs, "" when free
}

// NewAgent checks the options and returns an agent.
func NewAgent(o AgentOptions) (*Agent, error) {
	if err := o.Limits.Check(); err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Idle == 0 {
		o.Idle = IdleLimit
	}
	return &Agent{o: o}, nil
}

func (a *Agent) logf(format string, args ...any) {
	fmt.Fprintf(a.o.Log, "zcprof serve: "+format+"\n", args...)
}

func serverOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxRequest),
		grpc.MaxSendMsgSize(maxReply),
		// A connection that never finishes its handshake is dropped.
		grpc.ConnectionTimeout(HandshakeTimeout),
		grpc.MaxConcurrentStreams(4),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: KeepaliveEvery, Timeout: KeepaliveTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Second, PermitWithoutStream: true}),
		// Stop returns only once every session has released its side.
		grpc.WaitForHandlers(true),
	}
}

// ServeTCP serves TLS connections on ln until ctx ends.
func (a *Agent) ServeTCP(ctx context.Context, ln net.Listener, cert tls.Certificate) error {
	creds := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
	s := grpc.NewServer(append(serverOptions(), grpc.Creds(creds))...)
	pb.RegisterAgentServer(s, a)
	return serveUntil(ctx, s, ln, nil)
}

// ServeConn serves the one client at the other end of conn (--stdio: the
// ssh pipe, which ssh encrypts and authenticates) and returns when it is
// gone or ctx ends.
func (a *Agent) ServeConn(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	gone := make(chan struct{})
	var once sync.Once
	conn := newPipeConn(r, w, func() error { once.Do(func() { close(gone) }); return nil })
	s := grpc.NewServer(serverOptions()...)
	pb.RegisterAgentServer(s, a)
	return serveUntil(ctx, s, newOneConnListener(conn), gone)
}

func serveUntil(ctx context.Context, s *grpc.Server, ln net.Listener, gone <-chan struct{}) error {
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(ln) }()
	select {
	case <-ctx.Done():
	case <-gone:
	case err := <-errc:
		return err
	}
	// Stopping cancels every session's stream; each releases its side
	// (threads, sockets, programs, files) before Stop returns.
	s.Stop()
	return nil
}

func (a *Agent) acquire(who string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.holder != "" {
		return a.holder, false
	}
	a.holder = who
	return "", true
}

func (a *Agent) release() {
	a.mu.Lock()
	a.holder = ""
	a.mu.Unlock()
}

// Session is one client's conversation (pb/agent.proto).
func (a *Agent) Session(stream pb.Agent_SessionServer) error {
	ctx := stream.Context()
	who := "stdio"
	var local, remote netip.Addr
	var addrErr error
	if p, ok := peer.FromContext(ctx); ok && p.Addr.Network() != "pipe" {
		who = p.Addr.String()
		remote, addrErr = ipOf(p.Addr)
		if addrErr == nil {
			local, addrErr = ipOf(p.LocalAddr)
		}
	} else {
		local, remote, addrErr = sshAddrs(os.Getenv("SSH_CONNECTION"))
	}
	if holder, ok := a.acquire(who); !ok {
		a.logf("%s: refused: busy with %s", who, holder)
		return status.Errorf(codes.ResourceExhausted, "busy: another client (%s) is running a test on this agent", holder)
	}
	defer a.release()
	s := &session{a: a, stream: stream, who: who, local: local, remote: remote, addrErr: addrErr}
	err := s.serve(ctx)
	if s.side != nil {
		if cerr := s.side.Close(); cerr != nil {
			a.logf("%s: releasing the side: %s", who, oneLine(cerr))
		}
	}
	switch {
	case err == nil:
		a.logf("%s: session ended", who)
	case ctx.Err() != nil:
		a.logf("%s: client gone (its connection closed, or it left keepalive pings unanswered for %v); everything released", who, KeepaliveTimeout)
	default:
		a.logf("%s: %s", who, oneLine(err))
	}
	return nil
}

// session is one client's state on the agent.
type session struct {
	a       *Agent
	stream  pb.Agent_SessionServer
	who     string
	reqs    chan *pb.Request
	recvErr error

	local, remote netip.Addr
	addrErr       error
	side          *run.LocalSide
	runLimit      time.Duration // the prepared run's longest time
	moved         int64         // bytes this session's runs moved
}

func (s *session) send(r *pb.Reply) error { return s.stream.Send(r) }

func (s *session) fail(msg string) error {
	return s.send(&pb.Reply{Msg: &pb.Reply_Failure{Failure: &pb.Failure{Message: msg}}})
}

var errNothingInTime = errors.New("the client sent nothing in time")

// next waits for the client's next request; nil when the stream ended.
func (s *session) next(ctx context.Context, timeout <-chan time.Time) (*pb.Request, error) {
	select {
	case r, ok := <-s.reqs:
		if !ok {
			return nil, s.recvErr
		}
		return r, nil
	case <-timeout:
		return nil, errNothingInTime
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *session) serve(ctx context.Context) error {
	s.reqs = make(chan *pb.Request)
	go func() {
		defer close(s.reqs)
		for {
			r, err := s.stream.Recv()
			if err != nil {
				if err != io.EOF {
					s.recvErr = err
				}
				return
			}
			select {
			case s.reqs <- r:
			case <-ctx.Done():
				return
			}
		}
	}()
	if err := s.handshake(ctx); err != nil {
		return err
	}
	for {
		r, err := s.next(ctx, time.After(s.a.o.Idle))
		if errors.Is(err, errNothingInTime) {
			err = fmt.Errorf("no request for %v: the client is let go, its side released", s.a.o.Idle)
			s.fail(err.Error())
		}
		if err != nil || r == nil {
			return err
		}
		if err := strict(r); err != nil {
			s.fail(err.Error())
			return err
		}
		if err := s.handle(ctx, r); err != nil {
			return err
		}
	}
}

func (s *session) handshake(ctx context.Context) error {
	deadline := time.After(HandshakeTimeout)
	r, err := s.next(ctx, deadline)
	if err != nil || r == nil {
		return fmt.Errorf("no hello: %v", err)
	}
	if err := strict(r); err != nil {
		s.fail(err.Error())
		return err
	}
	h := r.GetHello()
	if h == nil || len(h.ClientNonce) != nonceLen {
		s.fail("protocol error: the first message must be a hello")
		return errors.New("protocol error: no hello")
	}
	if h.Version != Version {
		msg := fmt.Sprintf("version mismatch: the client (zcprof %s) speaks protocol %d, this agent (zcprof %s) %d",
			clip(h.Software), h.Version, s.a.o.Software, Version)
		s.fail(msg)
		return errors.New(msg)
	}
	server, err := nonce()
	if err != nil {
		return err
	}
	host := kernel.ReadHost()
	name, _ := os.Hostname()
	w := &pb.Welcome{Version: Version, Software: s.a.o.Software, Capabilities: capabilities(s.a.o.Limits),
		ServerNonce: server, AuthRequired: s.a.o.Token != nil}
	if s.a.o.Token == nil {
		w.Hostname, w.Kernel = name, host.Kernel
	}
	if s.addrErr == nil {
		w.DataAddr = s.local.String()
	}
	if err := s.send(&pb.Reply{Msg: &pb.Reply_Welcome{Welcome: w}}); err != nil {
		return err
	}
	if s.a.o.Token == nil {
		return nil
	}
	r, err = s.next(ctx, deadline)
	if err != nil || r == nil {
		return fmt.Errorf("no authentication: %v", err)
	}
	auth := r.GetAuth()
	if auth == nil || strict(r) != nil || !validProof(s.a.o.Token, byClient, server, h.ClientNonce, auth.Mac) {
		time.Sleep(AuthFailDelay)
		s.fail(errAuth.Error())
		return errAuth
	}
	// Only now does the agent say who it is.
	ok := &pb.AuthOK{Mac: proof(s.a.o.Token, byAgent, server, h.ClientNonce), Hostname: name, Kernel: host.Kernel}
	return s.send(&pb.Reply{Msg: &pb.Reply_AuthOk{AuthOk: ok}})
}

// handle serves one request. An error ends the session; a request the
// agent refuses is a Failure reply, and the side it concerned is closed.
func (s *session) handle(ctx context.Context, r *pb.Request) error {
	refuse := func(err error) error {
		s.closeSide()
		return s.fail(oneLine(err))
	}
	switch m := r.Msg.(type) {
	case *pb.Request_Prepare:
		if s.side != nil {
			return refuse(errors.New("protocol error: prepare while a side is open"))
		}
		p, err := s.a.o.Limits.validate(m.Prepare)
		if err != nil {
			return refuse(err)
		}
		if s.addrErr != nil {
			return refuse(fmt.Errorf("no data address: %v", s.addrErr))
		}
		// Divided, not multiplied: a large --max-bytes must not wrap.
		left := s.a.o.Limits.MaxTotalBytes - s.moved
		if left <= 0 || p.cfg.Bytes > left/int64(p.cfg.Streams) {
			return refuse(fmt.Errorf("this session has moved %d bytes: this agent allows %d in all", s.moved, s.a.o.Limits.MaxTotalBytes))
		}
		so := run.SideOptions{Backend: p.accounts, ByteClasses: p.classes, Attribution: p.attr, Threads: p.threads,
			Local: s.local, Peer: s.remote, DataPorts: s.a.o.DataPorts}
		s.side = run.NewLocalSide(so, p.role)
		s.a.logf("%s: %s %s→%s %d B ×%d", s.who, p.role, p.cfg.Method, p.cfg.RxMethod, p.cfg.Size, p.cfg.Streams)
		ports, err := s.side.Prepare(ctx, p.cfg, p.ports)
		if err != nil {
			return refuse(err)
		}
		out := &pb.Prepared{}
		for _, port := range ports {
			out.Ports = append(out.Ports, uint32(port))
		}
		s.runLimit = p.cfg.Duration + runGrace
		if p.cfg.Duration == 0 {
			s.runLimit = s.a.o.Limits.MaxDuration + runGrace
		}
		return s.send(&pb.Reply{Msg: &pb.Reply_Prepared{Prepared: out}})
	case *pb.Request_Start:
		if s.side == nil {
			return refuse(errors.New("protocol error: start without prepare"))
		}
		if err := s.side.Start(ctx); err != nil {
			return refuse(err)
		}
		return s.send(&pb.Reply{Msg: &pb.Reply_Started{Started: &pb.Started{}}})
	case *pb.Request_Run:
		if s.side == nil {
			return refuse(errors.New("protocol error: run without prepare"))
		}
		return s.run(ctx)
	case *pb.Request_Finish:
		if s.side == nil {
			return refuse(errors.New("protocol error: finish without prepare"))
		}
		res, err := s.side.Finish(ctx)
		if err != nil {
			return refuse(err)
		}
		s.moved += res.Counts.SentBytes + res.Counts.ReceivedBytes
		b, err := json.Marshal(res)
		if err != nil {
			return refuse(err)
		}
		return s.send(&pb.Reply{Msg: &pb.Reply_Finished{Finished: &pb.Finished{Side: b}}})
	case *pb.Request_Close:
		if err := s.closeSide(); err != nil {
			return s.fail(oneLine(err))
		}
		return s.send(&pb.Reply{Msg: &pb.Reply_Closed{Closed: &pb.Closed{}}})
	}
	return refuse(errors.New("protocol error: unexpected request"))
}

func (s *session) closeSide() error {
	if s.side == nil {
		return nil
	}
	err := s.side.Close()
	s.side = nil
	return err
}

// run releases the side and beats until it is done. A Close from the
// client (its Ctrl-C, or its own side failed) stops the run; so does the
// client going away, and a run past its time.
func (s *session) run(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, s.runLimit)
	defer cancel()
	released := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- s.side.Run(rctx, func() { close(released) }) }()
	beat := time.NewTicker(heartbeatEvery)
	defer beat.Stop()
	closing := false
	reqs := s.reqs
	for {
		select {
		case <-released:
			released = nil
			s.a.logf("%s: running", s.who)
			if err := s.send(&pb.Reply{Msg: &pb.Reply_Released{Released: &pb.Released{}}}); err != nil {
				cancel()
				<-done
				return err
			}
		case <-beat.C:
			if err := s.send(&pb.Reply{Msg: &pb.Reply_Heartbeat{Heartbeat: &pb.Heartbeat{}}}); err != nil {
				cancel()
				<-done
				return err
			}
		case r, ok := <-reqs:
			cancel()
			if !ok {
				<-done
				return fmt.Errorf("client gone during the run: %v", s.recvErr)
			}
			if r.GetClose() == nil {
				<-done
				s.closeSide()
				return s.fail("protocol error: only close may come during a run")
			}
			closing, reqs = true, nil
		case err := <-done:
			if closing {
				cerr := s.closeSide()
				if cerr != nil {
					return s.fail(oneLine(cerr))
				}
				return s.send(&pb.Reply{Msg: &pb.Reply_Closed{Closed: &pb.Closed{}}})
			}
			if err != nil {
				if rctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
					err = fmt.Errorf("the run took longer than %v: stopped", s.runLimit)
				}
				s.closeSide()
				return s.fail(oneLine(err))
			}
			return s.send(&pb.Reply{Msg: &pb.Reply_RunDone{RunDone: &pb.RunDone{}}})
		}
	}
}

// The welcome's capability prefixes for send methods.
const (
	methodCap      = "method:"
	unavailableCap = "unavailable:"
)

// capabilities lists what this agent does: the side protocol, the send
// methods it allows ("method:NAME") and, of those, the ones this kernel
// cannot send with ("unavailable:NAME:WHY"), which matter only when it is
// the sender (--reverse): as the receiver it runs no send method.
func capabilities(l Limits) []string {
	out := []string{"side", "reverse"}
	for _, m := range l.Methods {
		out = append(out, methodCap+m)
		if err := workload.CanSend(m); err != nil {
			out = append(out, unavailableCap+m+":"+oneLine(err))
		}
	}
	return out
}

// ipOf is the IP address of a TCP connection's end (an IPv4-mapped IPv6
// address, as a dual-stack listener sees IPv4 clients, as IPv4).
func ipOf(a net.Addr) (netip.Addr, error) {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, fmt.Errorf("not a TCP address: %v", a)
	}
	return tcp.AddrPort().Addr().Unmap(), nil
}

// sshAddrs reads the agent's and the client's addresses from sshd's
// SSH_CONNECTION ("client port server port"; IPv4 or IPv6).
func sshAddrs(env string) (local, remote netip.Addr, err error) {
	f := strings.Fields(env)
	if len(f) != 4 {
		return local, remote, errors.New("--stdio without SSH_CONNECTION (run it through ssh): the data connections' addresses are unknown")
	}
	if local, err = netip.ParseAddr(f[2]); err == nil {
		remote, err = netip.ParseAddr(f[0])
	}
	if err != nil {
		return netip.Addr{}, netip.Addr{}, fmt.Errorf("SSH_CONNECTION %q: %v", env, err)
	}
	return local.Unmap(), remote.Unmap(), nil
}

func oneLine(err error) string {
	return strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ")
}
