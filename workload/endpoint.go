package workload

import (
	"net/netip"

	"github.com/zcprof/zcprof/workload/netns"
)

// endpoint is where one side of every stream lives. enter runs on that
// side's locked OS thread before it opens any socket; the receiver side
// also says which address to listen on. A future remote receiver only has
// to provide an address and port in place of a local endpoint.
type endpoint interface {
	enter() error
	addr() netip.Addr
}

// topology pairs the two endpoints and owns what they need.
type topology struct {
	sender, receiver endpoint
	close            func() error
}

type loopbackEndpoint struct{}

func (loopbackEndpoint) enter() error     { return nil }
func (loopbackEndpoint) addr() netip.Addr { return netip.AddrFrom4([4]byte{127, 0, 0, 1}) }

type netnsEndpoint struct {
	ns *netns.NS
	ip netip.Addr
}

// enter moves the calling thread into the namespace for good: the thread
// is never unlocked, so the runtime discards it when its goroutine exits.
func (e netnsEndpoint) enter() error     { return netns.Enter(e.ns) }
func (e netnsEndpoint) addr() netip.Addr { return e.ip }

func newTopology(cfg Config) (*topology, error) {
	if cfg.Topology != TopoNetns {
		return &topology{sender: loopbackEndpoint{}, receiver: loopbackEndpoint{}, close: func() error { return nil }}, nil
	}
	// veth defaults to MTU 1500 (MSS 1448), which can never carry whole
	// pages; TCP_ZEROCOPY_RECEIVE runs need room for a 4096-byte MSS.
	mtu := 0
	if cfg.RxMethod == RxZerocopy {
		mtu = 9000
	}
	p, err := netns.Create(mtu)
	if err != nil {
		return nil, err
	}
	return &topology{
		sender:   netnsEndpoint{p.Sender, netip.AddrFrom4(netns.SenderAddr)},
		receiver: netnsEndpoint{p.Receiver, netip.AddrFrom4(netns.ReceiverAddr)},
		close:    p.Close,
	}, nil
}
