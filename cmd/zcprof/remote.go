package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/zcprof/zcprof/workload"
	"github.com/zcprof/zcprof/workload/remote"
	zrun "github.com/zcprof/zcprof/workload/run"
)

// remoteFlags are `run`'s two-host flags.
type remoteFlags struct {
	addr, tokenFile, fingerprint, dataPort string
	reverse                                bool
}

func (r *remoteFlags) register(f *pflag.FlagSet) {
	f.StringVar(&r.addr, "remote", "", "run against zcprof serve on another host: HOST:PORT (TLS) or ssh://[user@]host[:port] (runs zcprof serve --stdio there); this host sends")
	f.StringVar(&r.tokenFile, "token-file", "", "with --remote: the token the agent asks for, in `FILE` (never sent: challenge-response)")
	f.StringVar(&r.fingerprint, "fingerprint", "", "with --remote HOST:PORT: the agent's certificate SHA-256 (default: pinned on first use under the user's config dir)")
	f.BoolVar(&r.reverse, "reverse", false, "with --remote: the remote host sends and this one receives (iperf3 -R)")
	f.StringVar(&r.dataPort, "data-port", "", "with --remote --reverse: receive data on PORT or LOW-HIGH, one port per stream (default: ephemeral)")
}

// runsHere says whether role runs on this host: both do without --remote.
func (r *remoteFlags) runsHere(role workload.Role) bool {
	if r.addr == "" {
		return true
	}
	return (role == workload.RoleReceiver) == r.reverse
}

// connect checks the two-host flags and, with --remote, connects to the
// agent and makes it the run's peer. The returned close ends the session.
func (r *remoteFlags) connect(ctx context.Context, f *pflag.FlagSet, opts *zrun.Options, note func(string)) (func() error, error) {
	none := func() error { return nil }
	if r.addr == "" {
		for _, name := range []string{"token-file", "fingerprint", "reverse", "data-port"} {
			if f.Changed(name) {
				return none, fmt.Errorf("--%s needs --remote", name)
			}
		}
		return none, nil
	}
	if f.Changed("topology") {
		return none, errors.New("--remote and --topology exclude each other: a remote run's topology is the two hosts")
	}
	ports, err := zrun.ParsePortRange(r.dataPort)
	if err != nil {
		return none, err
	}
	if ports.Lo > 0 && !r.reverse {
		return none, errors.New("--data-port is where this host receives: it needs --reverse (the agent has its own --data-port)")
	}
	var token []byte
	if r.tokenFile != "" {
		if token, err = remote.ReadToken(r.tokenFile); err != nil {
			return none, err
		}
	}
	opts.Topology, opts.Reverse = workload.TopoRemote, r.reverse
	// Validate the matrix before connecting anywhere.
	if _, err := opts.Configs(); err != nil {
		return none, err
	}
	c, err := remote.Dial(ctx, remote.ClientOptions{Addr: r.addr, Token: token, Fingerprint: r.fingerprint, Software: version, Note: note})
	if err != nil {
		return none, err
	}
	if r.reverse && !f.Changed("method") {
		opts.Methods = leaveOutUnsendable(opts.Methods, c.CanSend, note)
	}
	if err := c.CheckMethods(opts.Methods, r.reverse); err != nil {
		c.Close()
		return none, err
	}
	opts.Peer, opts.Reverse, opts.DataPorts = c, r.reverse, ports
	return c.Close, nil
}
