package workload

import (
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// PortRange is where a receiver of a two-host run listens: stream i takes
// port Lo+i, so that a firewall can be opened for exactly those ports. The
// zero range takes ephemeral ports.
type PortRange struct{ Lo, Hi int }

// Len is how many ports the range holds (0: ephemeral, any number).
func (p PortRange) Len() int {
	if p.Lo == 0 {
		return 0
	}
	return p.Hi - p.Lo + 1
}

func (p PortRange) String() string {
	switch {
	case p.Lo == 0:
		return "ephemeral"
	case p.Lo == p.Hi:
		return fmt.Sprint(p.Lo)
	}
	return fmt.Sprintf("%d-%d", p.Lo, p.Hi)
}

// DataBind says where the receiving half of a two-host transfer listens:
// an address of this host (IPv4 or IPv6), ports from Ports, and
// connections only from Peer (the other host; the zero Addr accepts any).
type DataBind struct {
	Addr  netip.Addr
	Ports PortRange
	Peer  netip.Addr
}

// remoteEndpoint is this process's side of a two-host transfer: nothing to
// enter, and the address is where the receiver listens (its own address
// on the receiving host, the peer's on the sending one).
type remoteEndpoint struct{ ip netip.Addr }

func (remoteEndpoint) enter() error       { return nil }
func (e remoteEndpoint) addr() netip.Addr { return e.ip }

// PrepareReceiver starts the receiving half of a two-host transfer: one
// listener per stream on bind, then an accept in each receiver thread.
// It returns once every stream listens (Ports); Connected waits for the
// sender's connections.
func PrepareReceiver(cfg Config, bind DataBind) (*Transfer, error) {
	cfg.Topology = TopoRemote
	cfg.SenderCPU = -1 // the peer's, which checks it
	if err := cfg.ValidateReceiver(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if n := bind.Ports.Len(); n > 0 && n < cfg.Streams {
		return nil, fmt.Errorf("--data-port %s is too narrow for %d streams: each stream takes a port", bind.Ports, cfg.Streams)
	}
	t := newTransfer(cfg, &topology{receiver: remoteEndpoint{bind.Addr}, close: func() error { return nil }})
	t.bind = bind
	ready := make(chan error, cfg.Streams)
	ports := make([]chan int, cfg.Streams)
	for i := range cfg.Streams {
		ports[i] = make(chan int, 1)
		rx := newWorker(RoleReceiver, i)
		t.workers = append(t.workers, rx)
		go t.receiverMain(rx, ports[i], ready)
	}
	t.pending = ready
	timeout := time.After(setupTimeout)
	for i, c := range ports {
		select {
		case p := <-c:
			if p < 0 {
				return nil, t.failSetup(ready)
			}
			t.ports = append(t.ports, p)
		case <-timeout:
			t.Close()
			return nil, fmt.Errorf("receiver %d did not listen within %v", i, setupTimeout)
		}
	}
	return t, nil
}

// failSetup closes a half-started transfer and returns the first setup
// error some thread reported.
func (t *Transfer) failSetup(ready <-chan error) error {
	t.Close()
	for {
		select {
		case err := <-ready:
			if err != nil {
				return err
			}
		default:
			return errors.New("workload: setup failed")
		}
	}
}

// Ports are the receiving half's listening ports, stream by stream.
func (t *Transfer) Ports() []int { return t.ports }

// Connected waits until every receiver of PrepareReceiver has accepted
// its stream (or failed). On failure the transfer is closed.
func (t *Transfer) Connected() error {
	if t.pending == nil {
		return nil
	}
	ready := t.pending
	t.pending = nil
	return t.waitReady(ready)
}

// PrepareSender starts the sending half of a two-host transfer: one
// sender thread per stream, connected to addr:ports[i].
func PrepareSender(cfg Config, addr netip.Addr, ports []int) (*Transfer, error) {
	cfg.Topology = TopoRemote
	cfg.ReceiverCPU = -1 // the peer's, which checks it
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if len(ports) != cfg.Streams {
		return nil, fmt.Errorf("workload: %d ports for %d streams", len(ports), cfg.Streams)
	}
	t := newTransfer(cfg, &topology{sender: loopbackEndpoint{}, receiver: remoteEndpoint{addr}, close: func() error { return nil }})
	if err := t.createPayload(); err != nil {
		return nil, err
	}
	ready := make(chan error, cfg.Streams)
	for i := range cfg.Streams {
		port := make(chan int, 1)
		port <- ports[i]
		tx := newWorker(RoleSender, i)
		t.workers = append(t.workers, tx)
		go t.senderMain(tx, port, ready)
	}
	if err := t.waitReady(ready); err != nil {
		return nil, err
	}
	return t, nil
}
