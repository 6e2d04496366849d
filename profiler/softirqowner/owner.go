// Package softirqowner says for whose socket the NET_RX softirq work that
// runs inside a thread was done (bpf/softirq_owner.bpf.c). It shares the
// accounting session's per-CPU state, so it must be attached to an open
// profiler.Session and closed before it.
package softirqowner

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/kernel"
)

// Owner tags (mirror enum zc_owner_tag in bpf/softirq_owner.h).
const (
	OwnerUnknown uint32 = 0 // no tcp_probe in the segment: backlogged, or not TCP
	OwnerOther   uint32 = 1 // a socket nobody registered
	OwnerFirst   uint32 = 2 // the first tag Register accepts
)

// Ctx is where a segment was processed (mirror enum zc_owner_ctx).
type Ctx uint8

const (
	CtxNetRx Ctx = iota // NET_RX softirq
	CtxTask             // task context: the socket backlog, run by the owner's release_sock
	CtxOther            // another interrupt context
)

// Key addresses one counter: the accounting generation of the thread that
// ran the work (0: no target), the owner tag and the context.
type Key struct {
	Gen   uint32
	Owner uint32
	Ctx   Ctx
}

// Counter: Segs and Bytes count tcp_probe events of registered sockets and
// their new TCP payload, less the payload of segments TCP then dropped (a
// key's Bytes can therefore wrap below zero; sums over keys are right);
// NS is NET_RX time from one skb's entry into the stack to the next skb or
// the softirq's exit, for every socket.
type Counter struct {
	Segs, Bytes, NS uint64
}

// Counts is one reading of all counters.
type Counts map[Key]Counter

// Sub returns c - prev.
func (c Counts) Sub(prev Counts) Counts {
	out := Counts{}
	for k, v := range c {
		p := prev[k]
		d := Counter{v.Segs - p.Segs, v.Bytes - p.Bytes, v.NS - p.NS}
		if d != (Counter{}) {
			out[k] = d
		}
	}
	return out
}

// Tracker is the attached object.
type Tracker struct {
	coll  *ebpf.Collection
	links []link.Link
}

// tracepoints and their program names (without the btf_/raw_ prefix). The
// segment open at softirq exit is closed by the accounting's own
// softirq_exit handler (bpf/owner_split.h): one program on that hook.
var points = []struct{ tracepoint, prog string }{
	{"netif_receive_skb", "own_netif_rx"},
	{"tcp_probe", "own_tcp_probe"},
	{"kfree_skb", "own_kfree_skb"}, // takes back the bytes of dropped segments
}

// Attach loads the programs of the session's backend, sharing its
// cpu_states map and the split's counters (the session must be opened
// with profiler.Options.OwnerSplit), and adds them to the session's
// overhead figures.
func Attach(sess *profiler.Session) (*Tracker, error) {
	spec, err := bpf.LoadSoftirqOwner()
	if err != nil {
		return nil, fmt.Errorf("parse softirq owner object: %w", err)
	}
	if err := profiler.SetHookDispatch(spec); err != nil {
		return nil, fmt.Errorf("softirq owner: %w", err)
	}
	prefix := "btf_"
	if sess.Backend() == kernel.RawTp {
		prefix = "raw_"
	}
	keep := map[string]bool{}
	for _, p := range points {
		keep[prefix+p.prog] = true
	}
	for name := range spec.Programs {
		if !keep[name] {
			delete(spec.Programs, name)
		}
	}
	shared, err := sess.SharedMaps(spec)
	if err != nil {
		return nil, fmt.Errorf("softirq owner: %w", err)
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		MapReplacements: shared,
		Cache:           bpf.KernelBTF,
	})
	if err != nil {
		return nil, fmt.Errorf("softirq owner: load: %w", bpf.ShortError(err))
	}
	t := &Tracker{coll: coll}
	var progs []*ebpf.Program
	for _, p := range points {
		prog := coll.Programs[prefix+p.prog]
		lk, err := kernel.AttachProgram(sess.Backend(), p.tracepoint, prog)
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("softirq owner: attach %s: %w", p.tracepoint, err)
		}
		t.links = append(t.links, lk)
		progs = append(progs, prog)
	}
	sess.TrackPrograms(progs...)
	return t, nil
}

// Register names a socket (by its SO_COOKIE) with a tag >= OwnerFirst.
func (t *Tracker) Register(cookie uint64, tag uint32) error {
	if tag < OwnerFirst {
		return fmt.Errorf("softirq owner: tag %d is reserved", tag)
	}
	if cookie == 0 {
		return errors.New("softirq owner: socket cookie 0")
	}
	if err := t.coll.Maps["owners"].Update(cookie, tag, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("softirq owner: register cookie %d: %w", cookie, err)
	}
	return nil
}

// Read sums the per-CPU counters.
func (t *Tracker) Read() (Counts, error) {
	var (
		k      bpf.SoftirqOwnerZcOwnerKey
		perCPU []bpf.SoftirqOwnerZcOwnerVal
	)
	out := Counts{}
	it := t.coll.Maps["owner_stats"].Iterate()
	for it.Next(&k, &perCPU) {
		var c Counter
		for _, v := range perCPU {
			c.Segs += v.Segs
			c.Bytes += v.Bytes
			c.NS += v.Ns
		}
		out[Key{k.Gen, k.Owner, Ctx(k.Ctx)}] = c
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("softirq owner: read: %w", err)
	}
	return out, nil
}

// Dropped counts updates lost to a full map.
func (t *Tracker) Dropped() uint64 {
	var n uint64
	_ = t.coll.Maps["owner_drops"].Lookup(uint32(0), &n)
	return n
}

// Close detaches and frees the programs and maps (the shared map stays
// with the session). Idempotent.
func (t *Tracker) Close() error {
	var errs []error
	for _, lk := range t.links {
		errs = append(errs, lk.Close())
	}
	t.links = nil
	if t.coll != nil {
		t.coll.Close()
		t.coll = nil
	}
	return errors.Join(errs...)
}
