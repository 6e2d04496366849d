package attrib

import (
	"context"
	"fmt"
	"github.com/zcprof/zcprof/profiler/testenv"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zcprof/zcprof/profiler"
	"github.com/zcprof/zcprof/profiler/taxonomy"
	"github.com/zcprof/zcprof/workload"
)

func requireBPF(t testing.TB) { testenv.RequireBPF(t) }

// sampledRun is one workload transfer profiled with exact accounting and
// the sampler.
type sampledRun struct {
	cfg     workload.Config
	res     workload.Result
	iv      profiler.Interval
	samples *Samples
	roles   map[uint32]workload.Role // generation -> role
	ids     []uint32                 // program ids, for the detach check
	smpID   uint32
	// unavailable is the sampler's Unavailable().
	unavailable map[string]string
	// The sampling program's run time and count over the run (BPF stats).
	smpRunNS, smpRuns uint64
}

// runSampled prepares cfg, profiles its threads with the sampler at hz and
// returns what both saw (hz 0: no sampler). Everything is closed before it
// returns.
func runSampled(t testing.TB, cfg workload.Config, hz int) *sampledRun {
	t.Helper()
	tr, err := workload.Prepare(cfg)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	defer tr.Close()
	byTID := map[int]workload.Role{}
	var tids []int
	for _, th := range tr.Threads() {
		byTID[th.TID] = th.Role
		tids = append(tids, th.TID)
	}
	sess, err := profiler.Open(profiler.Options{Target: profiler.Target{TIDs: tids}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer sess.Close()
	var smp *Sampler
	if hz > 0 {
		if smp, err = Start(sess, hz); err != nil {
			t.Fatalf("Start: %v", err)
		}
		defer smp.Close()
	}
	collect := func() *Samples {
		if smp == nil {
			return &Samples{Counts: map[StackKey]uint64{}}
		}
		r, err := smp.Collect()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	progStats := func() (uint64, uint64) {
		st := sess.ProgramStats()["zc_sample"]
		return st[0], st[1]
	}

	snap0, err := sess.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r0 := collect()
	ns0, n0 := progStats()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := tr.Run(ctx)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	snap1, err := sess.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	r1 := collect()
	ns1, n1 := progStats()
	run := &sampledRun{cfg: cfg, res: res, iv: profiler.Delta(snap0, snap1), samples: r1.Sub(r0),
		roles: map[uint32]workload.Role{}, ids: sess.ProgramIDs(), smpRunNS: ns1 - ns0, smpRuns: n1 - n0}
	if smp != nil {
		run.smpID = smp.ProgramID()
		run.unavailable = smp.Unavailable()
	}
	for _, th := range run.iv.Threads {
		if r, ok := byTID[th.Info.TID]; ok {
			run.roles[th.Info.Gen] = r
		}
	}
	if smp != nil {
		if err := smp.Close(); err != nil {
			t.Errorf("sampler Close: %v", err)
		}
	}
	if err := sess.Close(); err != nil {
		t.Errorf("session Close: %v", err)
	}
	return run
}

// threads returns the interval's threads of one role.
func (r *sampledRun) threads(role workload.Role) []profiler.ThreadDelta {
	var out []profiler.ThreadDelta
	for _, th := range r.iv.Threads {
		if r.roles[th.Info.Gen] == role {
			out = append(out, th)
		}
	}
	return out
}

// folded renders the samples of the workload's threads as fixture lines:
// "role;path;ctx;root;...;leaf count", sorted.
func (r *sampledRun) folded() string {
	var lines []string
	for k, n := range r.samples.Counts {
		role, ok := r.roles[k.Key.Gen]
		if !ok {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s;%s;%s;%s %d", role, k.Key.Path, k.Key.Ctx, k.Stack, n))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + "\n"
}

// heaviest renders the n most sampled stacks of one role's path in task
// context, each with its category, for a failure to show what was counted.
func (r *sampledRun) heaviest(role workload.Role, path string, n int) string {
	type stack struct {
		s string
		n uint64
	}
	var all []stack
	var sum uint64
	for k, c := range r.samples.Counts {
		if r.roles[k.Key.Gen] == role && k.Key.Path.String() == path && k.Key.Ctx == taxonomy.CtxTask {
			all = append(all, stack{k.Stack, c})
			sum += c
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n })
	var b strings.Builder
	for i, st := range all {
		if i == n {
			break
		}
		fmt.Fprintf(&b, "  %5.1f%% %-8s %s\n", 100*float64(st.n)/float64(sum), Classify(st.s), st.s)
	}
	return b.String()
}

// stackShare is the share of one role's path's samples of category cat
// whose stack holds frame.
func (r *sampledRun) stackShare(role workload.Role, path, cat, frame string) float64 {
	var in, all uint64
	for k, n := range r.samples.Counts {
		if r.roles[k.Key.Gen] != role || k.Key.Path.String() != path || Classify(k.Stack) != cat {
			continue
		}
		all += n
		if strings.Contains(k.Stack, frame) {
			in += n
		}
	}
	if all == 0 {
		return 0
	}
	return float64(in) / float64(all)
}
