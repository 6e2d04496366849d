package run

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zcprof/zcprof/workload"
)

func TestConfigsDefault(t *testing.T) {
	cfgs, err := Defaults().Configs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != len(DefaultMethods) {
		t.Fatalf("%d cells, want %d", len(cfgs), len(DefaultMethods))
	}
	for i, c := range cfgs {
		if c.Method != DefaultMethods[i] || c.RxMethod != workload.RxRead || c.Size != 64<<10 || c.Streams != 1 ||
			c.Duration != 3*time.Second || c.Topology != workload.TopoLoopback || c.SenderCPU != -1 || c.ReceiverCPU != -1 {
			t.Errorf("cell %d: %+v", i, c)
		}
	}
}

func TestConfigsMatrix(t *testing.T) {
	o := Defaults()
	o.Methods = []string{"write", "sendfile", "write"}
	o.RxMethods = []string{"read", "trunc"}
	o.Sizes = []int{8 << 10, 64 << 10}
	o.Streams = []int{1, 2}
	o.ColdCache = true
	cfgs, err := o.Configs()
	if err != nil {
		t.Fatal(err)
	}
	// Duplicates collapse: 2 methods x 2 x 2 x 2.
	if len(cfgs) != 16 {
		t.Fatalf("%d cells, want 16", len(cfgs))
	}
	if c := cfgs[15]; c.Method != "sendfile" || c.RxMethod != "trunc" || c.Size != 64<<10 || c.Streams != 2 || !c.ColdCache {
		t.Errorf("last cell %+v", c)
	}
	if cfgs[0].ColdCache {
		t.Error("--cold-cache applied to write, which reads no file")
	}
}

// Bad requests fail before anything starts, with one line saying why.
func TestConfigsInvalid(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"method", func(o *Options) { o.Methods = []string{"write", "carrier-pigeon"} }, `unknown method "carrier-pigeon"`},
		{"rx", func(o *Options) { o.RxMethods = []string{"mmap"} }, `unknown rx method "mmap"`},
		{"size0", func(o *Options) { o.Sizes = []int{0} }, "--size 0"},
		{"size-1", func(o *Options) { o.Sizes = []int{-1} }, "--size -1"},
		{"zc size", func(o *Options) { o.RxMethods = []string{"zerocopy"}; o.Sizes = []int{1000} }, "multiple of 4096"},
		{"streams", func(o *Options) { o.Streams = []int{workload.MaxStreams() + 1} }, "--streams"},
		{"cpus", func(o *Options) { o.SenderCPU = runtime.NumCPU() }, "--cpus"},
		{"topology", func(o *Options) { o.Topology = "mars" }, `unknown topology "mars"`},
		{"repeat", func(o *Options) { o.Repeat = 0 }, "--repeat 0"},
		{"ci repeat", func(o *Options) { o.CI = &CI{Level: 0.95, WidthPct: 5}; o.Repeat = 2 }, "--ci needs --repeat of at least 3"},
		{"both", func(o *Options) { o.Bytes = 1 << 20 }, "either --duration or --bytes"},
		{"short", func(o *Options) { o.Duration = time.Millisecond }, "at least 100ms"},
		{"empty", func(o *Options) { o.Methods = nil }, "empty matrix"},
	} {
		o := Defaults()
		c.mod(&o)
		_, err := o.Configs()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v, want one line containing %q", c.name, err, c.want)
		}
	}
}
