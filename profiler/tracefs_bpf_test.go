package profiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/pseudofs"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/testenv"
)

// assertClassicAttached: no byte-class program on a classic tracepoint
// failed, and tracefs was there for them.
func assertClassicAttached(t *testing.T, s *Session) {
	t.Helper()
	lost := byteclass.ClassicLost()
	for k, v := range s.Unavailable() {
		if k == "tracefs" || lost[k] || strings.Contains(v, "tracefs") {
			t.Errorf("unavailable %s: %s", k, v)
		}
	}
}

// A fresh machine has no tracefs: the session mounts it for its life, every
// byte class on a classic tracepoint attaches and counts, and the machine
// is left without tracefs. A tracefs someone else mounted stays.
func TestByteClassesWithoutTracefs(t *testing.T) {
	if !testenv.InFreshMounts(t) {
		return
	}
	if pseudofs.Tracefs.Available() {
		t.Fatal("tracefs is mounted in the fresh namespace")
	}
	for _, mode := range []string{"", byteclass.SyscallReturn} {
		t.Run("mode="+mode, func(t *testing.T) {
			s, err := Open(Options{Target: Target{TIDs: []int{unix.Gettid()}}, ByteClasses: mode})
			if err != nil {
				t.Fatal(err)
			}
			assertClassicAttached(t, s)
			if m := s.Mounted(); len(m) != 1 || !strings.Contains(m[0], "tracefs") {
				t.Errorf("Mounted() = %q, want the tracefs note", m)
			}
			if d := s.NewDocument("profile", Interval{}); len(d.Backends.Mounted) != 1 {
				t.Errorf("document backends.mounted = %q", d.Backends.Mounted)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if pseudofs.Tracefs.Available() {
				t.Fatal("tracefs still mounted after Close")
			}
		})
	}
	// The class that needs sys_enter_sendfile64, counted exactly.
	t.Run("sendfile from O_DIRECT", func(t *testing.T) {
		size := uint64(testenv.Pick(4<<20, 1<<20))
		path := filepath.Join(t.TempDir(), "payload")
		if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_DIRECT, 0)
		if err != nil {
			t.Skipf("%s: O_DIRECT: %v", path, err)
		}
		defer unix.Close(fd)
		zc, n := sendfileFrom(t, fd, size, "", "")
		if n != size || zc.TxSourceCopiedBytes != n || zc.TxCopiedBytes != n || zc.TxSplicedBytes != 0 {
			t.Errorf("%+v, sent %d", zc, n)
		}
		if pseudofs.Tracefs.Available() {
			t.Fatal("tracefs still mounted after the session")
		}
	})
	t.Run("mounted by someone else", func(t *testing.T) {
		if err := unix.Mount("tracefs", pseudofs.Tracefs.Dir, "tracefs", 0, ""); err != nil {
			t.Fatal(err)
		}
		s, err := Open(Options{Target: Target{TIDs: []int{unix.Gettid()}}})
		if err != nil {
			t.Fatal(err)
		}
		assertClassicAttached(t, s)
		if m := s.Mounted(); len(m) != 0 {
			t.Errorf("Mounted() = %q for a tracefs zcprof did not mount", m)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if !pseudofs.Tracefs.Available() {
			t.Fatal("Close unmounted a tracefs zcprof did not mount")
		}
	})
}

// Without tracefs and unable to mount it (here: the lock directory is
// read-only), the classic-tracepoint byte classes are missing: the model
// names each, and the table warns about each, not only the JSON.
func TestMissingByteClassSourcesAreWarnings(t *testing.T) {
	if !testenv.InFreshMounts(t) {
		return
	}
	if err := unix.Mount("tmpfs", pseudofs.LockDir, "tmpfs", unix.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Options{Target: Target{TIDs: []int{unix.Gettid()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d := s.NewDocument("profile", Interval{})
	if d.Backends.Unavailable["tracefs"] == "" {
		t.Fatalf("no tracefs entry in unavailable: %v", d.Backends.Unavailable)
	}
	got := map[string]bool{}
	for _, src := range d.Backends.ByteClassesUnavailable {
		got[src] = true
	}
	for lost := range byteclass.ClassicLost() {
		src := strings.TrimPrefix(lost, byteclass.UnavailablePrefix)
		if !got[src] {
			t.Errorf("byte_classes_unavailable %q lacks %q", d.Backends.ByteClassesUnavailable, src)
		}
	}
	var table strings.Builder
	if err := report.WriteTable(&table, d); err != nil {
		t.Fatal(err)
	}
	for _, src := range d.Backends.ByteClassesUnavailable {
		if !strings.Contains(table.String(), "warning: not attached: byte classes for "+src+" (") {
			t.Errorf("the table does not warn about %s:\n%s", src, table.String())
		}
	}
	if !strings.Contains(table.String(), "warning: tracefs is not mounted") {
		t.Errorf("the table does not say tracefs is missing:\n%s", table.String())
	}
}
