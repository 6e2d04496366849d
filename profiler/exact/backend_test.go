package exact

import (
	"reflect"
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// An interval of one sender thread (gen 7) whose write() ran NET_RX, plus
// a system row, with the function deltas BPF would have recorded.
func fixtureInterval() (profiler.Interval, *Snapshot) {
	task := profiler.PathCtx{Path: taxonomy.PathTxWrite, Ctx: taxonomy.CtxTask}
	netrx := profiler.PathCtx{Path: taxonomy.PathTxWrite, Ctx: taxonomy.CtxSoftirqNetRx}
	iv := profiler.Interval{
		Threads: []profiler.ThreadDelta{{
			Info: profiler.ThreadInfo{Gen: 7, TID: 100, TGID: 100},
			Counters: map[profiler.PathCtx]profiler.Counter{
				task:  {Calls: 10, NS: 5_000_000, Bytes: 640 << 10},
				netrx: {Calls: 30, NS: 2_000_000},
			},
		}},
		System: map[profiler.PathCtx]profiler.Counter{
			{Path: taxonomy.PathSysKsoftirqd, Ctx: taxonomy.CtxSoftirqNetRx}: {Calls: 2, NS: 300_000},
		},
	}
	key := func(gen uint32, pc profiler.PathCtx, id uint8) FuncKey {
		return FuncKey{Key: profiler.Key{Gen: gen, Path: pc.Path, Ctx: pc.Ctx}, Func: id}
	}
	d := &Snapshot{Stats: map[FuncKey]Stat{
		key(7, task, FuncTCPSendmsgLocked): {Calls: 10, NS: 4_000_000, Bytes: 640 << 10},
		key(7, netrx, FuncSkbCopyUbufs):    {Calls: 5, NS: 500_000, Bytes: 320 << 10},
		key(0, profiler.PathCtx{Path: taxonomy.PathSysKsoftirqd, Ctx: taxonomy.CtxSoftirqNetRx}, FuncSkbCopyUbufs): {Calls: 1, NS: 100_000, Bytes: 64 << 10},
	}}
	return iv, d
}

func TestSplitInterval(t *testing.T) {
	iv, d := fixtureInterval()
	stacks := map[profiler.Key]map[string]uint64{
		{Gen: 7, Path: taxonomy.PathTxWrite, Ctx: taxonomy.CtxTask}: {
			sendPrefix + ";_copy_from_iter": 3,
			sendPrefix + ";tcp_push":        1,
		},
	}
	got := splitInterval(iv, d, attachedExcept(FuncCopyFromIter), stacks, classifyStub)

	tk := profiler.Key{Gen: 7, Path: taxonomy.PathTxWrite, Ctx: taxonomy.CtxTask}
	nk := profiler.Key{Gen: 7, Path: taxonomy.PathTxWrite, Ctx: taxonomy.CtxSoftirqNetRx}
	sk := profiler.Key{Gen: 0, Path: taxonomy.PathSysKsoftirqd, Ctx: taxonomy.CtxSoftirqNetRx}
	if len(got) != 3 {
		t.Fatalf("keys %v, want the sender's task and NET_RX keys and the system row", got)
	}
	// 3 of 4 samples in the copy: copy.tx = 4 ms x 0.75, an estimate.
	task := got[tk]
	if len(task) != 3 || task[0].Category != attrib.CopyTx || task[0].CPUNS != 3_000_000 || task[0].Exact ||
		task[1].Category != attrib.TCPTx || task[1].CPUNS != 1_000_000 ||
		task[2] != (report.Category{Category: attrib.Other, CPUNS: 1_000_000, Exact: true}) {
		t.Errorf("sender task: %+v", task)
	}
	want := []report.Category{
		{Category: attrib.CopyDeferred, CPUNS: 500_000, Exact: true},
		{Category: attrib.Other, CPUNS: 1_500_000, Exact: true},
	}
	if !reflect.DeepEqual(got[nk], want) {
		t.Errorf("sender NET_RX: %+v, want %+v", got[nk], want)
	}
	want = []report.Category{
		{Category: attrib.CopyDeferred, CPUNS: 100_000, Exact: true},
		{Category: attrib.Other, CPUNS: 200_000, Exact: true},
	}
	if !reflect.DeepEqual(got[sk], want) {
		t.Errorf("system ksoftirqd: %+v, want %+v", got[sk], want)
	}

	// Without a sampler the same interval stays exact throughout.
	for k, cats := range splitInterval(iv, d, attachedExcept(FuncCopyFromIter), nil, nil) {
		for _, c := range cats {
			if !c.Exact || c.CI95NS != 0 {
				t.Errorf("%v: %+v is an estimate without a sampler", k, c)
			}
		}
	}
}

func TestBackendCategoriesFromReadings(t *testing.T) {
	iv, d := fixtureInterval()
	b := NewBackend(&Tracer{mode: kernel.Kprobe, attached: Functions[:1]}, nil)
	prev := &Reading{mode: kernel.Kprobe, FX: &Snapshot{Stats: map[FuncKey]Stat{}}}
	// Cumulative counters: cur = prev + d; the interval's split sees d.
	cur := &Reading{mode: kernel.Kprobe, FX: d}
	got := b.Categories(iv, prev, cur)
	if len(got) != 3 {
		t.Errorf("categories of %d keys, want 3", len(got))
	}
	if b.Name() != kernel.Kprobe || cur.Backend() != kernel.Kprobe {
		t.Errorf("names %q %q", b.Name(), cur.Backend())
	}
	// A reading of another backend is ignored, not a panic.
	if got := b.Categories(iv, nil, &attrib.Samples{}); got != nil {
		t.Errorf("foreign reading: %v", got)
	}
}

func TestBackendUnavailable(t *testing.T) {
	tr := &Tracer{mode: kernel.Fentry, unavailable: map[string]string{
		"_copy_from_iter":  "fentry: attach failed: device or resource busy (the function cannot take a BPF trampoline (no __fentry__ call or already patched))",
		"splice_to_socket": "not in /proc/kallsyms (inlined or absent on this build)",
	}}
	withSampler := NewBackend(tr, &Sampled{}).Unavailable()
	if got := withSampler["function/_copy_from_iter"]; !strings.Contains(got, "device or resource busy") ||
		!strings.Contains(got, "copy.tx inside tcp_sendmsg_locked = its exact self time x the sampled copy share") {
		t.Errorf("_copy_from_iter with a sampler: %q", got)
	}
	if got := withSampler["function/splice_to_socket"]; !strings.HasSuffix(got, "; its time stays in its traced callers") {
		t.Errorf("splice_to_socket: %q", got)
	}
	alone := NewBackend(tr, nil).Unavailable()
	if got := alone["function/_copy_from_iter"]; !strings.Contains(got, "no sampler runs") {
		t.Errorf("_copy_from_iter without a sampler: %q", got)
	}
}

func TestFillFunctions(t *testing.T) {
	iv, d := fixtureInterval()
	doc := &report.Document{Processes: profiler.Processes(iv, true), System: profiler.SystemRow(iv)}
	FillFunctions(doc, iv, d)

	find := func(paths []report.Path, name string) report.Path {
		for _, p := range paths {
			if p.Path == name {
				return p
			}
		}
		t.Fatalf("no path %s in %+v", name, paths)
		return report.Path{}
	}
	if len(doc.Processes) != 1 || len(doc.Processes[0].Threads) != 1 {
		t.Fatalf("processes %+v", doc.Processes)
	}
	for _, paths := range [][]report.Path{doc.Processes[0].Paths, doc.Processes[0].Threads[0].Paths} {
		want := []report.Function{{Function: "tcp_sendmsg_locked", Calls: 10, NS: 4_000_000, SelfNS: 4_000_000,
			Bytes: 640 << 10, NSPerCall: 400_000}}
		if got := find(paths, "tx.write").Functions; !reflect.DeepEqual(got, want) {
			t.Errorf("tx.write functions %+v, want %+v", got, want)
		}
		// NET_RX time is listed under softirq.net_rx, and so are its functions.
		if got := find(paths, "softirq.net_rx").Functions; len(got) != 1 || got[0].Function != "skb_copy_ubufs" || got[0].Bytes != 320<<10 {
			t.Errorf("softirq.net_rx functions %+v", got)
		}
	}
	if got := find(doc.System.Paths, "system.ksoftirqd").Functions; len(got) != 1 || got[0].Calls != 1 {
		t.Errorf("system row functions %+v", got)
	}

	var out strings.Builder
	doc.Command = "profile"
	if err := report.WriteTable(&out, doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "traced: tcp_sendmsg_locked 4.0 ms in 10 calls, 0.6 MiB") {
		t.Errorf("table lacks the traced functions:\n%s", out.String())
	}
}
