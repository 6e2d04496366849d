package exact

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/report"
)

func attachedExcept(missing ...uint8) func(uint8) bool {
	return func(id uint8) bool {
		for _, m := range missing {
			if m == id {
				return false
			}
		}
		return true
	}
}

func cat(name string, ns, ci uint64, exact bool) report.Category {
	return report.Category{Category: name, CPUNS: ns, CI95NS: ci, Exact: exact}
}

// A receiver's rx.read task time: tcp_recvmsg_locked calling
// skb_copy_datagram_iter calling simple_copy_to_iter; all exact.
func TestSplitReceiveExact(t *testing.T) {
	in := KeyInput{
		TotalNS: 10_000_000,
		Stats: map[uint8]Stat{
			FuncTCPRecvmsgLocked:    {Calls: 100, NS: 8_000_000, ChildNS: 6_000_000, Bytes: 1 << 20},
			FuncSkbCopyDatagramIter: {Calls: 120, NS: 6_000_000, ChildNS: 5_500_000, Bytes: 1 << 20},
			FuncSimpleCopyToIter:    {Calls: 300, NS: 5_500_000, Bytes: 1 << 20},
		},
		Attached: attachedExcept(FuncCopyToIter),
	}
	got := Split(in)
	want := []report.Category{
		cat(attrib.CopyRx, 500_000+5_500_000, 0, true), // both copy functions' self times
		cat(attrib.TCPRx, 2_000_000, 0, true),
		cat(attrib.Other, 2_000_000, 0, true), // syscall time outside tcp_recvmsg_locked
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Split =\n %+v\nwant\n %+v", got, want)
	}
	var sum uint64
	for _, c := range got {
		sum += c.CPUNS
	}
	if sum != in.TotalNS {
		t.Errorf("categories add up to %d, want the key's %d", sum, in.TotalNS)
	}
}

// The combination of exact and sampled figures: copy.tx = tcp_sendmsg_locked's exact self
// time x the sampled copy share of it, when _copy_from_iter is refused.
func TestSplitCopyShareFromSampling(t *testing.T) {
	in := KeyInput{
		TotalNS: 3_000_000,
		Stats: map[uint8]Stat{
			// 2 ms of its own, 0.5 ms in skb_zerocopy_iter_stream.
			FuncTCPSendmsgLocked:      {Calls: 10, NS: 2_500_000, ChildNS: 500_000},
			FuncSkbZerocopyIterStream: {Calls: 10, NS: 500_000},
		},
		Attached: attachedExcept(FuncCopyFromIter),
		Shares:   map[uint8]Share{FuncTCPSendmsgLocked: {Copy: 60, Total: 100}},
	}
	got := Split(in)
	// 95% Wilson interval of 60/100: [0.502003, 0.690599], half-width 0.0942981.
	ci := uint64(math.Round(2_000_000 * 0.09429806410563699))
	want := []report.Category{
		cat(attrib.CopyTx, 1_200_000, ci, false),
		cat(attrib.ZcPin, 500_000, 0, true),
		cat(attrib.TCPTx, 800_000, ci, false),
		cat(attrib.Other, 500_000, 0, true),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Split =\n %+v\nwant\n %+v", got, want)
	}
	src := Sources(in)[attrib.CopyTx]
	if len(src) != 1 || !strings.Contains(src[0], "sampled share 60/100") || !strings.Contains(src[0], "_copy_from_iter not traceable") {
		t.Errorf("copy.tx source %q", src)
	}
}

func TestSplitCopyRoutineAttached(t *testing.T) {
	// A kernel that lets _copy_from_iter be traced: everything exact, no
	// sampling needed even if shares are offered.
	in := KeyInput{
		Stats: map[uint8]Stat{
			FuncTCPSendmsgLocked: {Calls: 1, NS: 1000, ChildNS: 700},
			FuncCopyFromIter:     {Calls: 3, NS: 700, Bytes: 3 << 12},
		},
		Attached: attachedExcept(),
		Shares:   map[uint8]Share{FuncTCPSendmsgLocked: {Copy: 1, Total: 2}},
	}
	want := []report.Category{cat(attrib.CopyTx, 700, 0, true), cat(attrib.TCPTx, 300, 0, true)}
	if got := Split(in); !reflect.DeepEqual(got, want) {
		t.Errorf("Split = %+v, want %+v", got, want)
	}
}

func TestSplitWithoutShare(t *testing.T) {
	// No sampler (or no sample inside the caller): the copy stays in
	// tcp.tx, still exact, and the source says so.
	for _, shares := range []map[uint8]Share{nil, {FuncTCPSendmsgLocked: {}}} {
		in := KeyInput{
			Stats:    map[uint8]Stat{FuncTCPSendmsgLocked: {Calls: 2, NS: 5000}},
			Attached: attachedExcept(FuncCopyFromIter),
			Shares:   shares,
		}
		want := []report.Category{cat(attrib.TCPTx, 5000, 0, true)}
		if got := Split(in); !reflect.DeepEqual(got, want) {
			t.Errorf("shares %v: Split = %+v, want %+v", shares, got, want)
		}
		if src := Sources(in)[attrib.TCPTx]; len(src) != 1 || !strings.Contains(src[0], "_copy_from_iter included") {
			t.Errorf("source %q", src)
		}
	}
}

func TestSplitSoftirqDeferredCopy(t *testing.T) {
	// NET_RX inside the sender: skb_copy_ubufs is copy.deferred, the rest
	// of the softirq time is "other" (not traced).
	in := KeyInput{
		TotalNS:  1_000_000,
		Stats:    map[uint8]Stat{FuncSkbCopyUbufs: {Calls: 40, NS: 400_000, Bytes: 40 << 16}},
		Attached: attachedExcept(),
	}
	want := []report.Category{cat(attrib.CopyDeferred, 400_000, 0, true), cat(attrib.Other, 600_000, 0, true)}
	if got := Split(in); !reflect.DeepEqual(got, want) {
		t.Errorf("Split = %+v, want %+v", got, want)
	}
}

func TestSplitClockSkew(t *testing.T) {
	// Traced time a little over the key's total (two clocks cut at
	// slightly different instants): no negative remainder.
	in := KeyInput{TotalNS: 900, Stats: map[uint8]Stat{FuncTCPRecvmsgLocked: {Calls: 1, NS: 1000}}}
	want := []report.Category{cat(attrib.TCPRx, 1000, 0, true)}
	if got := Split(in); !reflect.DeepEqual(got, want) {
		t.Errorf("Split = %+v, want %+v", got, want)
	}
	// Child time over the function's own (a clamp in BPF missed): self 0.
	if s := (Stat{NS: 10, ChildNS: 11}); s.SelfNS() != 0 {
		t.Errorf("SelfNS = %d", s.SelfNS())
	}
}
