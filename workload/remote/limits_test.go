package remote

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/zcprof/zcprof/workload"
	"github.com/zcprof/zcprof/workload/remote/pb"
)

func goodPrepare() *pb.Prepare {
	return &pb.Prepare{Role: "receiver", Method: "write", RxMethod: "read", Size: 65536, Streams: 1, DurationNs: uint64(3 * time.Second), Cpu: -1}
}

func TestValidate(t *testing.T) {
	l := DefaultLimits()
	l.Methods = []string{"write", "sendfile"}
	if p, err := l.validate(goodPrepare()); err != nil || p.role != workload.RoleReceiver || p.cfg.Topology != workload.TopoRemote || p.cfg.Size != 65536 {
		t.Fatalf("good prepare: %+v %v", p, err)
	}
	for _, c := range []struct {
		edit func(*pb.Prepare)
		want string
	}{
		{func(p *pb.Prepare) { p.Role = "both" }, `unknown role "both"`},
		{func(p *pb.Prepare) { p.Method = "msg_zerocopy" }, `method "msg_zerocopy" is not allowed on this agent (allowed: write, sendfile)`},
		{func(p *pb.Prepare) { p.Method = strings.Repeat("m", 1000) }, `method "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm..." is not allowed`},
		{func(p *pb.Prepare) { p.Size = 0 }, "size 0: this agent allows 1 to"},
		{func(p *pb.Prepare) { p.Size = 1 << 31 }, "size 2147483648: this agent allows"},
		{func(p *pb.Prepare) { p.Streams = 1 << 30 }, "streams 1073741824: this agent allows"},
		{func(p *pb.Prepare) { p.DurationNs = 1 << 63 }, "this agent allows at most 1m0s"},
		{func(p *pb.Prepare) { p.Bytes = 1 }, "either a duration or a byte count"},
		{func(p *pb.Prepare) { p.DurationNs, p.Bytes = 0, 1<<62 }, "bytes 4611686018427387904 per stream: this agent allows at most"},
		{func(p *pb.Prepare) { p.Cpu = -5 }, "cpu -5"},
		{func(p *pb.Prepare) { p.Cpu = 1 << 20 }, "out of range"},
		{func(p *pb.Prepare) { p.PeerPorts = []uint32{80} }, "a receiving agent takes no peer ports"},
		{func(p *pb.Prepare) { p.Role = "sender" }, "0 peer ports for 1 streams"},
		{func(p *pb.Prepare) { p.Role, p.PeerPorts = "sender", []uint32{70000} }, "peer port 70000 out of range"},
		{func(p *pb.Prepare) { p.RxMethod = "zerocopy"; p.Size = 1000 }, "multiple of 4096"},
		{func(p *pb.Prepare) { p.Accounting = "kprobe" }, `unknown accounting backend "kprobe"`},
		{func(p *pb.Prepare) { p.ByteClasses = "kprobe" }, `unknown byte-class backend "kprobe"`},
		{func(p *pb.Prepare) { p.Attribution = "dtrace" }, `--backend "dtrace": unknown`},
		{func(p *pb.Prepare) { p.Attribution, p.SampleHz = "sampling", 1<<30 }, "--sample-hz 1073741824"},
		{func(p *pb.Prepare) { p.Congestion = "../../etc/passwd" }, "congestion"},
		{func(p *pb.Prepare) { p.Mss = 1 << 31 }, "--mss 2147483648: the kernel takes a TCP_MAXSEG from 88 to 32767"},
		{func(p *pb.Prepare) {
			p.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 42, protowire.VarintType), 1))
		}, "fields this agent does not know"},
	} {
		p := goodPrepare()
		c.edit(p)
		_, err := l.validate(p)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line containing %q", p, err, c.want)
		}
	}
}

func TestLimitsCheck(t *testing.T) {
	for _, edit := range []func(*Limits){
		func(l *Limits) { l.Methods = nil },
		func(l *Limits) { l.Methods = []string{"telnet"} },
		func(l *Limits) { l.MaxDuration = 0 },
		func(l *Limits) { l.MaxStreams = 1 << 20 },
	} {
		l := DefaultLimits()
		edit(&l)
		if l.Check() == nil {
			t.Errorf("%+v accepted", l)
		}
	}
}

// FuzzRequest: whatever bytes arrive, decoding and validation neither
// panic nor accept a request outside the agent's limits.
func FuzzRequest(f *testing.F) {
	for _, r := range []*pb.Request{
		hello(Version),
		{Msg: &pb.Request_Prepare{Prepare: goodPrepare()}},
		{Msg: &pb.Request_Prepare{Prepare: &pb.Prepare{Role: "sender", Method: "msg_zerocopy", RxMethod: "zerocopy", Size: 1 << 20, Streams: 2, Bytes: 1 << 30, Cpu: 0, PeerPorts: []uint32{7472, 7473}, Attribution: "sampling", SampleHz: 999}}},
		{Msg: &pb.Request_Auth{Auth: &pb.Auth{Mac: make([]byte, 32)}}},
		{Msg: &pb.Request_Run{Run: &pb.Run{}}},
	} {
		b, err := proto.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	l := DefaultLimits()
	f.Fuzz(func(t *testing.T, b []byte) {
		var r pb.Request
		if proto.Unmarshal(b, &r) != nil {
			return
		}
		if strict(&r) != nil {
			return
		}
		p := r.GetPrepare()
		if p == nil {
			return
		}
		out, err := l.validate(p)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("a two-line refusal: %q", err)
			}
			return
		}
		c := out.cfg
		switch {
		case c.Size < 1 || c.Size > l.MaxSize, c.Streams < 1 || c.Streams > l.MaxStreams,
			c.Duration > l.MaxDuration, c.Bytes > l.MaxBytes, (c.Duration == 0) == (c.Bytes == 0),
			c.Topology != workload.TopoRemote, c.Validate() != nil:
			t.Errorf("accepted %+v", c)
		case out.role == workload.RoleSender && len(out.ports) != c.Streams:
			t.Errorf("accepted %d ports for %d streams", len(out.ports), c.Streams)
		}
	})
}
