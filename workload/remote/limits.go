package remote

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/workload"
	"github.com/zcprof/zcprof/workload/remote/pb"
)

// Limits are what an agent accepts; it checks every request against them
// itself.
type Limits struct {
	Methods     []string      // send methods the agent will run
	MaxSize     int           // bytes per call
	MaxStreams  int           // streams per cell
	MaxDuration time.Duration // per run; also bounds a --bytes run's time
	MaxBytes    int64         // per stream with --bytes
	// MaxTotalBytes bounds the bytes one session may move, all runs together.
	MaxTotalBytes int64
}

// DefaultLimits are `zcprof serve`'s defaults.
func DefaultLimits() Limits {
	return Limits{
		Methods:       workload.Methods,
		MaxSize:       16 << 20,
		MaxStreams:    workload.MaxStreams(),
		MaxDuration:   60 * time.Second,
		MaxBytes:      64 << 30,
		MaxTotalBytes: 1 << 40,
	}
}

// Check says whether the limits themselves make sense.
func (l Limits) Check() error {
	for _, m := range l.Methods {
		if !slices.Contains(workload.Methods, m) {
			return fmt.Errorf("--methods: unknown method %q (want %s)", m, strings.Join(workload.Methods, ", "))
		}
	}
	switch {
	case len(l.Methods) == 0:
		return errors.New("--methods: no method allowed")
	case l.MaxSize <= 0, l.MaxStreams <= 0, l.MaxDuration <= 0, l.MaxBytes <= 0, l.MaxTotalBytes <= 0:
		return errors.New("every --max-* limit must be positive")
	case l.MaxStreams > workload.MaxStreams():
		return fmt.Errorf("--max-streams %d: this host runs at most %d", l.MaxStreams, workload.MaxStreams())
	}
	return nil
}

// MaxRequest caps every message the agent receives (gRPC refuses a larger
// one before decoding it): requests are a few hundred bytes.
const MaxRequest = 16 << 10

// maxReply caps every message the client receives: a side's result with
// per-thread entries, traced functions and stacks.
const maxReply = 16 << 20

// strict refuses a message that carries fields this version does not know,
// anywhere in it: proto3 would keep them silently.
func strict(m proto.Message) error {
	var bad error
	var walk func(m proto.Message)
	walk = func(m proto.Message) {
		r := m.ProtoReflect()
		if len(r.GetUnknown()) > 0 && bad == nil {
			bad = errors.New("request has fields this agent does not know")
		}
		r.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			if fd.Message() != nil && !fd.IsList() && !fd.IsMap() {
				walk(v.Message().Interface())
			}
			return true
		})
	}
	walk(m)
	return bad
}

// prepared is a validated Prepare: the side to build.
type prepared struct {
	role     workload.Role
	cfg      workload.Config
	ports    []int
	accounts string
	classes  string // byte-class backend
	attr     *attrib.Options
	threads  bool
}

// validate turns a Prepare into a side's configuration, or says in one
// line which limit it breaks. It opens, binds and runs nothing.
func (l Limits) validate(p *pb.Prepare) (prepared, error) {
	var out prepared
	if p == nil {
		return out, errors.New("empty prepare")
	}
	if err := strict(p); err != nil {
		return out, err
	}
	switch workload.Role(p.Role) {
	case workload.RoleSender, workload.RoleReceiver:
		out.role = workload.Role(p.Role)
	default:
		return out, fmt.Errorf("unknown role %q", clip(p.Role))
	}
	if !slices.Contains(l.Methods, p.Method) {
		return out, fmt.Errorf("method %q is not allowed on this agent (allowed: %s)", clip(p.Method), strings.Join(l.Methods, ", "))
	}
	if p.Size == 0 || int64(p.Size) > int64(l.MaxSize) {
		return out, fmt.Errorf("size %d: this agent allows 1 to %d bytes", p.Size, l.MaxSize)
	}
	if p.Streams == 0 || int64(p.Streams) > int64(l.MaxStreams) {
		return out, fmt.Errorf("streams %d: this agent allows 1 to %d", p.Streams, l.MaxStreams)
	}
	switch {
	case (p.DurationNs == 0) == (p.Bytes == 0):
		return out, errors.New("need either a duration or a byte count")
	case p.DurationNs > uint64(l.MaxDuration):
		return out, fmt.Errorf("duration %v: this agent allows at most %v", time.Duration(min(p.DurationNs, 1<<62)), l.MaxDuration)
	case p.Bytes > uint64(l.MaxBytes):
		return out, fmt.Errorf("bytes %d per stream: this agent allows at most %d", p.Bytes, l.MaxBytes)
	}
	if p.Cpu < -1 {
		return out, fmt.Errorf("cpu %d: want -1 or a CPU number", p.Cpu)
	}
	out.cfg = workload.Config{
		Method: p.Method, RxMethod: p.RxMethod, Size: int(p.Size), Streams: int(p.Streams),
		Duration: time.Duration(p.DurationNs), Bytes: int64(p.Bytes), Topology: workload.TopoRemote,
		SenderCPU: -1, ReceiverCPU: -1, ColdCache: p.ColdCache, Congestion: p.Congestion, MSS: int(p.Mss),
	}
	if out.role == workload.RoleSender {
		out.cfg.SenderCPU = int(p.Cpu)
		if len(p.PeerPorts) != int(p.Streams) {
			return out, fmt.Errorf("%d peer ports for %d streams", len(p.PeerPorts), p.Streams)
		}
		for _, port := range p.PeerPorts {
			if port == 0 || port > 65535 {
				return out, fmt.Errorf("peer port %d out of range", port)
			}
			out.ports = append(out.ports, int(port))
		}
	} else {
		out.cfg.ReceiverCPU = int(p.Cpu)
		if len(p.PeerPorts) != 0 {
			return out, errors.New("a receiving agent takes no peer ports")
		}
	}
	validate := out.cfg.Validate
	if out.role == workload.RoleReceiver {
		validate = out.cfg.ValidateReceiver
	}
	if err := validate(); err != nil {
		return out, err
	}
	if p.Accounting != "" && !slices.Contains(kernel.AccountingChoices(), p.Accounting) {
		return out, fmt.Errorf("unknown accounting backend %q", clip(p.Accounting))
	}
	out.accounts = p.Accounting
	if p.ByteClasses != "" && !slices.Contains(byteclass.Choices(), p.ByteClasses) {
		return out, fmt.Errorf("unknown byte-class backend %q", clip(p.ByteClasses))
	}
	out.classes = p.ByteClasses
	if p.Attribution != "" {
		// 0: the agent's own default, from what a sample costs there.
		a := attrib.Options{Backend: p.Attribution, SampleHz: int(p.SampleHz)}
		if err := a.Validate(); err != nil {
			return out, err
		}
		out.attr = &a
	}
	out.threads = p.Threads
	return out, nil
}

// clip keeps a client's string short in the agent's one-line answers.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// clipLine keeps what the agent says (the client trusts its words no more
// than the agent trusts the client's) to one printable line of at most
// 200 bytes.
func clipLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, s)
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
