package byteclass

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/testenv"
)

// The byte-class object and each of its programs take the accounting's
// maps however the accounting sized them: on PREEMPT_RT its counters are
// smaller and preallocated, which the object's own declaration is not (the
// 6.12-rt guest lost every byte class to "map spec is incompatible with
// existing map").
func TestLoadMapsOnPreallocatedStats(t *testing.T) {
	testenv.RequireBPF(t)
	accounting, err := bpf.LoadAccounting()
	if err != nil {
		t.Fatal(err)
	}
	if err := preallocateStats(accounting); err != nil {
		t.Fatal(err)
	}
	accounting.Maps["threads"].MaxEntries = 64 // whatever size the accounting gives it
	shared := map[string]*ebpf.Map{}
	for _, name := range []string{"threads", "zcb_stats"} {
		m, err := ebpf.NewMap(accounting.Maps[name])
		if err != nil {
			t.Fatalf("accounting map %s: %v", name, err)
		}
		defer m.Close()
		shared[name] = m
	}
	spec, err := bpf.LoadZcbytes()
	if err != nil {
		t.Fatal(err)
	}
	b, err := loadMaps(spec, shared)
	if err != nil {
		t.Fatalf("byte-class maps on the accounting's: %v", err)
	}
	defer b.maps.Close()
	id := func(m *ebpf.Map) ebpf.MapID {
		info, err := m.Info()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := info.ID()
		return id
	}
	for name, m := range shared {
		if id(b.maps.Maps[name]) != id(m) {
			t.Errorf("%s: the byte classes have a map of their own, not the accounting's", name)
		}
	}
	if st := b.maps.Maps["zcb_stats"]; st.Flags() != shared["zcb_stats"].Flags() || st.MaxEntries() != rtStatsEntries {
		t.Errorf("counters: flags %#x, %d entries, want the accounting's preallocated %d", st.Flags(), st.MaxEntries(), rtStatsEntries)
	}
	// A program that counts into zcb_stats, loaded as attach loads each.
	coll, err := loadProgram(spec, "zcb_netif_receive_skb", b.maps.Maps)
	if err != nil {
		t.Fatalf("a program on the accounting's maps: %v", err)
	}
	coll.Close()
}
