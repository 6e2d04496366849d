package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/zcprof/zcprof/workload/remote"
	"github.com/zcprof/zcprof/workload/remote/pb"
)

// futureAgent answers every hello with the welcome of an agent one
// protocol version ahead, as a newer zcprof serve would.
type futureAgent struct {
	pb.UnimplementedAgentServer
}

func (futureAgent) Session(stream pb.Agent_SessionServer) error {
	if _, err := stream.Recv(); err != nil {
		return err
	}
	w := &pb.Welcome{Version: remote.Version + 1, Software: "9.9-future", ServerNonce: make([]byte, 32)}
	if err := stream.Send(&pb.Reply{Msg: &pb.Reply_Welcome{Welcome: w}}); err != nil {
		return err
	}
	_, err := stream.Recv() // until the client goes
	return err
}

// TestRemoteVersionMismatch: `zcprof run --remote` against an agent that
// speaks another protocol version says so in one line, naming both
// versions and both builds, and exits non-zero. (The agent's side of a
// mismatch: remote.TestVersionMismatch.)
func TestRemoteVersionMismatch(t *testing.T) {
	cert, fingerprint := selfSigned(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})))
	pb.RegisterAgentServer(s, futureAgent{})
	go s.Serve(ln)
	defer s.Stop()

	cmd := exec.Command(zcprofBin, "run", "--remote", ln.Addr().String(), "--fingerprint", fingerprint, "--method", "write", "--bytes", "1M")
	cmd.Env = append(cmd.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	r := run(t, cmd)
	want := fmt.Sprintf("version mismatch: this client (zcprof dev) speaks protocol %d, the agent at %s (zcprof 9.9-future) %d",
		remote.Version, ln.Addr(), remote.Version+1)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code == 0 || len(lines) != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, stderr %q; want one line containing %q", r.code, r.stderr, want)
	}
}

// selfSigned makes a throwaway agent certificate and its fingerprint.
func selfSigned(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "future agent"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, remote.Fingerprint(der)
}
