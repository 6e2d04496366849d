package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/workload"
	"github.com/zcprof/zcprof/workload/remote"
	zrun "github.com/zcprof/zcprof/workload/run"
)

// defaultListen is `zcprof serve`'s control address: loopback only.
const defaultListen = "127.0.0.1:7471"

func newServeCmd() *cobra.Command {
	var (
		listen, tokenFile, dataPort, methods string
		stdio                                bool
		maxBytes, maxTotal                   string
		lim                                  = remote.DefaultLimits()
	)
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Be the peer of a two-host run (zcprof run --remote on the other host)",
		Long: `Serves one zcprof run --remote client at a time: for each run of a cell this host plays
one side (the receiver, or with --reverse the sender), measured by its own kernel, and sends
its side's figures back.

Control is gRPC over TLS (a self-signed certificate made at the first start and kept under the
user's config dir; clients pin its SHA-256 fingerprint, printed at start) or, with --stdio,
over ssh's own channel. Data connections are plain TCP on --data-port.

The agent runs with BPF, so it trusts no client: it listens on loopback unless --listen says
otherwise, and off loopback only with --token-file (challenge-response, the token never sent);
it checks every request against the limits below itself; and it never runs a command, opens a
path or binds an address a client names: it listens for data on the address the client reached
it on, accepts data only from the client's address, and connects only to it.`,
		Example: `  zcprof serve                                   # loopback: for a local test, or reached through ssh
  zcprof serve --listen 10.0.0.2:7471 --token-file /etc/zcprof/token --data-port 7472-7479
  ssh lab2 zcprof serve --stdio                  # what zcprof run --remote ssh://lab2 runs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			f := cmd.Flags()
			lim.Methods = zrun.SplitList(methods)
			if lim.MaxBytes, err = zrun.ParseSize(maxBytes); err != nil {
				return fmt.Errorf("--max-bytes: %v", err)
			}
			if lim.MaxTotalBytes, err = zrun.ParseSize(maxTotal); err != nil {
				return fmt.Errorf("--max-total-bytes: %v", err)
			}
			ports, err := zrun.ParsePortRange(dataPort)
			if err != nil {
				return err
			}
			var token []byte
			if tokenFile != "" {
				if token, err = remote.ReadToken(tokenFile); err != nil {
					return err
				}
			}
			if stdio && f.Changed("listen") {
				return errors.New("give either --stdio or --listen, not both")
			}
			if err := kernel.Privileged(); err != nil {
				return err
			}
			// What an agent killed mid-run left behind (payload files).
			if removed, err := workload.CleanupStale(); err != nil {
				return fmt.Errorf("remove leftovers of earlier runs: %v", err)
			} else if len(removed) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "zcprof serve: removed leftovers of an earlier zcprof run: %s\n", strings.Join(removed, ", "))
			}
			removeStaleMounts()
			agent, err := remote.NewAgent(remote.AgentOptions{Limits: lim, Token: token, DataPorts: ports, Software: version, Log: cmd.ErrOrStderr()})
			if err != nil {
				return err
			}
			if stdio {
				return agent.ServeConn(cmd.Context(), os.Stdin, os.Stdout)
			}
			if err := checkListen(listen, token != nil); err != nil {
				return err
			}
			cert, fp, err := remote.AgentCertificate()
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen %s: %v", listen, err)
			}
			defer ln.Close()
			auth := "no token (loopback only)"
			if token != nil {
				auth = "token from " + tokenFile
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "zcprof serve: listening on %s, data ports %s, %s; certificate sha256 %s\n", ln.Addr(), ports, auth, fp)
			return agent.ServeTCP(cmd.Context(), ln, cert)
		},
	}
	d := remote.DefaultLimits()
	f := cmd.Flags()
	f.StringVar(&listen, "listen", defaultListen, "control address, HOST:PORT (off loopback needs --token-file)")
	f.BoolVar(&stdio, "stdio", false, "serve the one client on stdin/stdout (started by ssh: zcprof run --remote ssh://host)")
	f.StringVar(&tokenFile, "token-file", "", "require clients to prove they hold the token in this `FILE` (first line, at least 16 bytes)")
	f.StringVar(&dataPort, "data-port", "", "listen for data on PORT or LOW-HIGH, one port per stream (default: ephemeral ports)")
	f.StringVar(&methods, "methods", strings.Join(d.Methods, ","), "send methods clients may run here")
	f.IntVar(&lim.MaxSize, "max-size", d.MaxSize, "largest bytes per send call and receive buffer")
	f.IntVar(&lim.MaxStreams, "max-streams", d.MaxStreams, "most streams per cell (at most 4 per CPU)")
	f.DurationVar(&lim.MaxDuration, "max-duration", d.MaxDuration, "longest --duration per run; a --bytes run is stopped after it (plus "+(30*time.Second).String()+")")
	f.StringVar(&maxBytes, "max-bytes", "64G", "largest --bytes per stream")
	f.StringVar(&maxTotal, "max-total-bytes", "1024G", "most bytes one client's session may move, all runs together")
	cmd.Long += fmt.Sprintf("\n\nFixed limits: control messages at most %d KiB in; hello and token within %v of connecting;\na wrong token answered after %v; a client that leaves gRPC keepalive pings (every %v) unanswered\nfor %v, or asks nothing for %v between runs, is dropped, its side released.",
		remote.MaxRequest>>10, remote.HandshakeTimeout, remote.AuthFailDelay, remote.KeepaliveEvery, remote.KeepaliveTimeout, remote.IdleLimit)
	return cmd
}

// checkListen refuses a control address off loopback without a token.
func checkListen(listen string, token bool) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("--listen %q: want HOST:PORT", listen)
	}
	ip := net.ParseIP(host)
	if host == "localhost" || (ip != nil && ip.IsLoopback()) || token {
		return nil
	}
	return fmt.Errorf("--listen %s is not a loopback address: refusing to serve the network without --token-file", listen)
}
