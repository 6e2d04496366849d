// Package remote is the two-host mode of `zcprof run`: the agent
// (`zcprof serve`) that plays one side of each cell on its host, measured
// by its own kernel, and the client (`zcprof run --remote`) that drives it
// as a run.Side. The control protocol is gRPC (pb/agent.proto) over TLS on
// TCP, or over the stdin/stdout of `ssh host zcprof serve --stdio`; the
// data connections are plain TCP beside it.
//
// The agent runs as root with BPF, so it trusts nothing it is sent: every
// request is decoded strictly and checked against the agent's own limits,
// and it never runs a command, opens a path or binds an address a client
// names (its data addresses are the control connection's own ends).
package remote

// Version is the control protocol's version; a client and an agent of
// different versions refuse each other in one line. 2: an agent that
// requires a token names its host only once the client has proved it.
const Version = 2
