package workload

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zcprof/zcprof/workload/netns"
)

func TestValidate(t *testing.T) {
	ok := Config{Method: MethodWrite, Size: 4096, Streams: 1, Bytes: 1, SenderCPU: -1, ReceiverCPU: -1}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, c := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"method", func(c *Config) { c.Method = "carrier-pigeon" }, `unknown method "carrier-pigeon"`},
		{"rx", func(c *Config) { c.RxMethod = "x" }, `unknown rx method "x"`},
		{"topology", func(c *Config) { c.Topology = "x" }, `unknown topology "x"`},
		{"size0", func(c *Config) { c.Size = 0 }, "--size 0: message size must be positive"},
		{"zc size", func(c *Config) { c.RxMethod = RxZerocopy; c.Size = 6000 }, `rx method "zerocopy" needs a size that is a multiple of 4096`},
		{"zc small", func(c *Config) { c.RxMethod = RxZerocopy; c.Size = 100 }, "multiple of 4096"},
		{"streams", func(c *Config) { c.Streams = MaxStreams() + 1 }, "--streams"},
		{"no end", func(c *Config) { c.Bytes = 0 }, "need a duration or a byte count"},
		{"cpu", func(c *Config) { c.SenderCPU = 4096 }, "--cpus: sender cpu 4096"},
		{"nosockzc", func(c *Config) { c.NoSockZerocopy = true }, "no-sock-zerocopy"},
		{"congestion", func(c *Config) { c.Congestion = "cubic;reno" }, `--congestion "cubic;reno": not a congestion control name`},
		{"congestion long", func(c *Config) { c.Congestion = "a_very_long_name_x" }, "at most 15"},
		{"mss small", func(c *Config) { c.MSS = 87 }, "--mss 87: the kernel takes a TCP_MAXSEG from 88 to 32767"},
		{"mss large", func(c *Config) { c.MSS = 32768 }, "--mss 32768: the kernel takes"},
		{"mss negative", func(c *Config) { c.MSS = -1 }, "--mss -1:"},
	} {
		cfg := ok
		c.mod(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err %v, want one line containing %q", c.name, err, c.want)
		}
	}
}

// TestValidateIOUringDisabled flips kernel.io_uring_disabled to 2 and
// expects a clear refusal before anything starts.
func TestValidateIOUringDisabled(t *testing.T) {
	requireRoot(t)
	const f = "/proc/sys/kernel/io_uring_disabled"
	old, err := os.ReadFile(f)
	if err != nil {
		t.Skip(err)
	}
	if err := os.WriteFile(f, []byte("2"), 0); err != nil {
		t.Skip(err)
	}
	defer os.WriteFile(f, old, 0)
	cfg := defaults(MethodIOUringZC, RxRead)
	err = cfg.Validate()
	want := `method "io_uring_zc": io_uring is disabled on this kernel (kernel.io_uring_disabled=2)`
	if err == nil || err.Error() != want {
		t.Fatalf("err %v, want %q", err, want)
	}
}

// TestThreadsAliveAfterRun: tids are distinct, belong to this process, and
// still exist (schedstat readable) after Run; after Close they are gone.
func TestThreadsAliveAfterRun(t *testing.T) {
	requireRoot(t)
	cfg := defaults(MethodWrite, RxRead)
	cfg.Streams = 2
	tr, err := Prepare(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	threads := tr.Threads()
	if len(threads) != 4 {
		t.Fatalf("%d threads, want 4", len(threads))
	}
	seen := map[int]bool{}
	for _, th := range threads {
		if th.TID <= 0 || seen[th.TID] {
			t.Fatalf("bad or duplicate tid in %+v", threads)
		}
		seen[th.TID] = true
	}
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, th := range threads {
		if _, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/schedstat", th.TID)); err != nil {
			t.Errorf("%s %d tid %d gone after Run: %v", th.Role, th.Stream, th.TID, err)
		}
	}
	if _, err := tr.Run(context.Background()); err == nil {
		t.Error("second Run succeeded")
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// A goroutine exiting while locked terminates its thread, except the
	// process's main thread, which the runtime parks for good instead.
	for _, th := range threads {
		path := fmt.Sprintf("/proc/self/task/%d", th.TID)
		for i := 0; i < 100 && th.TID != os.Getpid(); i++ {
			if _, err := os.Stat(path); err != nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := os.Stat(path); err == nil && th.TID != os.Getpid() {
			t.Errorf("tid %d still alive after Close", th.TID)
		}
	}
}

// TestDuration: time-bounded run; receivers drain to EOF so sent == received.
func TestDuration(t *testing.T) {
	requireRoot(t)
	for _, m := range []string{MethodWrite, MethodMsgZerocopy, MethodIOUringZC, MethodSendfile} {
		t.Run(m, func(t *testing.T) {
			cfg := defaults(m, RxRead)
			cfg.Bytes = 0
			cfg.Duration = 200 * time.Millisecond
			res := runTransfer(t, cfg)
			s := res.Streams[0]
			if s.SentBytes == 0 || s.SentBytes != s.ReceivedBytes || s.PayloadErrors != 0 {
				t.Errorf("sent %d received %d errors %d", s.SentBytes, s.ReceivedBytes, s.PayloadErrors)
			}
			if res.Elapsed < cfg.Duration || res.Elapsed > cfg.Duration+2*time.Second {
				t.Errorf("elapsed %v for duration %v", res.Elapsed, cfg.Duration)
			}
		})
	}
}

// TestCancel: a long run returns promptly on cancel, and Close still works.
func TestCancel(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct{ method, rx string }{
		{MethodWrite, RxRead}, {MethodMsgZerocopy, RxZerocopy}, {MethodIOUringZC, RxSplice}, {MethodVmsplice, RxTrunc},
	} {
		t.Run(c.method+"/"+c.rx, func(t *testing.T) {
			cfg := defaults(c.method, c.rx)
			cfg.Bytes = 0
			cfg.Duration = time.Hour
			tr, err := Prepare(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			res, err := tr.Run(ctx)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Run err %v, want deadline exceeded", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Run took %v after cancel", d)
			}
			if res.SentBytes() == 0 {
				t.Error("nothing sent before cancel")
			}
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestTempFileRemoved: file-backed methods (cold cache too) leave no file.
func TestTempFileRemoved(t *testing.T) {
	requireRoot(t)
	pat := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-*", tempPrefix, os.Getpid()))
	for _, m := range []string{MethodSendfile, MethodSplice, MethodMmap} {
		cfg := defaults(m, RxRead)
		cfg.ColdCache = true
		res := runTransfer(t, cfg)
		checkExact(t, cfg, res)
	}
	if left, _ := filepath.Glob(pat); len(left) > 0 {
		t.Errorf("temp files left: %v", left)
	}
}

// TestPayloadFileHasNoName: the payload file is unlinked from the start,
// so a SIGKILLed run leaves nothing; the senders still open it.
func TestPayloadFileHasNoName(t *testing.T) {
	requireRoot(t)
	pat := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-*", tempPrefix, os.Getpid()))
	tr, err := Prepare(defaults(MethodSendfile, RxRead))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if left, _ := filepath.Glob(pat); len(left) > 0 {
		t.Errorf("payload file has a name while in use: %v", left)
	}
	if st, err := os.Stat(tr.file); err != nil || st.Size() != fileLen {
		t.Fatalf("payload %s: %v, %v", tr.file, st, err)
	}
	res, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	checkExact(t, defaults(MethodSendfile, RxRead), res)
}

// TestNetns: transfers across the veth pair, then nothing left behind.
func TestNetns(t *testing.T) {
	requireRoot(t)
	// Only this process's namespaces, held by descriptor.
	before := len(netns.HeldBy(os.Getpid()))
	var used []string
	for _, c := range []struct{ method, rx string }{
		{MethodWrite, RxRead}, {MethodSendfile, RxSplice}, {MethodMsgZerocopy, RxZerocopy}, {MethodIOUringZC, RxRead},
	} {
		t.Run(c.method+"/"+c.rx, func(t *testing.T) {
			cfg := defaults(c.method, c.rx)
			cfg.Topology = TopoNetns
			cfg.Streams = 2
			tr, err := Prepare(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ours := netns.HeldBy(os.Getpid())
			if len(ours) != before+2 {
				t.Errorf("namespaces held during run: %v", ours)
			}
			used = append(used, ours...)
			res, err := tr.Run(context.Background())
			if cerr := tr.Close(); cerr != nil {
				t.Errorf("Close: %v", cerr)
			}
			if err != nil {
				t.Fatal(err)
			}
			checkExact(t, cfg, res)
			s := res.Total()
			switch c.method {
			case MethodMsgZerocopy, MethodIOUringZC:
				// Local delivery through veth copies too (skb_copy_ubufs).
				if s.ZCCompletions != s.SendCalls || s.ZCCopied != s.ZCCompletions {
					t.Errorf("completions %d copied %d sends %d", s.ZCCompletions, s.ZCCopied, s.SendCalls)
				}
			}
			if c.rx == RxZerocopy {
				t.Logf("veth: mapped %d of %d", s.RxMappedBytes, 2*cfg.Bytes)
			}
		})
	}
	if after := netns.HeldBy(os.Getpid()); len(after) != before {
		t.Errorf("namespaces held: %d before, %v after", before, after)
	}
	// The kernel frees them once their threads and sockets are gone.
	for _, id := range used {
		deadline := time.Now().Add(5 * time.Second)
		for netns.InUse(id) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if netns.InUse(id) {
			t.Errorf("namespace %s still in use after Close", id)
		}
	}
	if out, _ := exec.Command("ip", "-o", "link", "show", "type", "veth").CombinedOutput(); strings.Contains(string(out), "zc-") {
		t.Errorf("veth left in host namespace: %s", out)
	}
}

// TestCleanupStale: a namespace and a temp file named for a dead pid are
// removed; ours are kept.
func TestCleanupStale(t *testing.T) {
	requireRoot(t)
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	if netns.Alive(dead) {
		t.Skip("pid reused")
	}
	// Plant and check under the lock, or a zcprof run started by another
	// test binary now could remove the planted entries first.
	unlock, err := netns.LockStale()
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ns := fmt.Sprintf("%s%d-1-tx", netns.Prefix, dead)
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v %s", err, out)
	}
	defer exec.Command("ip", "netns", "del", ns).Run()
	file := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-x.payload", tempPrefix, dead))
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(file)
	mine := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-x.payload", tempPrefix, os.Getpid()))
	os.WriteFile(mine, nil, 0o600)
	defer os.Remove(mine)

	removed, err := cleanupStale()
	if err != nil {
		t.Fatal(err)
	}
	if netns.Exists(ns) {
		t.Errorf("stale namespace %s survived (removed %v)", ns, removed)
	}
	if _, err := os.Stat(file); err == nil {
		t.Errorf("stale file %s survived", file)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("live run's file removed")
	}
}
