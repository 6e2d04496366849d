package profiler

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Target says which tasks to account. Any combination may be set; a task
// that matches one of them is a target.
type Target struct {
	All            bool   // every task except zcprof itself
	PIDs           []int  // processes (all their threads)
	TIDs           []int  // single threads (zcprof run's senders and receivers)
	Comm           string // processes whose leader has this command name
	Cgroup         string // a cgroup v2 directory; the tasks in it and below
	FollowChildren bool   // children forked by a target become targets
}

// String names the target as a user gave it: "pid 4242", "comm nginx,
// cgroup /sys/fs/cgroup/x", "every task".
func (t Target) String() string {
	if t.All {
		return "every task"
	}
	var parts []string
	for _, set := range []struct {
		name string
		ids  []int
	}{{"pid", t.PIDs}, {"tid", t.TIDs}} {
		if len(set.ids) > 0 {
			ids := make([]string, len(set.ids))
			for i, id := range set.ids {
				ids[i] = strconv.Itoa(id)
			}
			parts = append(parts, set.name+" "+strings.Join(ids, ","))
		}
	}
	if t.Comm != "" {
		parts = append(parts, "comm "+t.Comm)
	}
	if t.Cgroup != "" {
		parts = append(parts, "cgroup "+t.Cgroup)
	}
	return strings.Join(parts, ", ")
}

// Filter bits; mirror enum zc_filter in bpf/accounting.h.
const (
	filterAll    = 1
	filterTgid   = 2
	filterTid    = 4
	filterCgroup = 8
	filterComm   = 16
)

type filterConfig struct {
	filter         uint32
	followChildren bool
	selfTgid       uint32
	comm           string
}

func (t Target) filterConfig() (filterConfig, error) {
	cfg := filterConfig{followChildren: t.FollowChildren, selfTgid: uint32(os.Getpid())}
	if t.All {
		cfg.filter |= filterAll
	}
	// PIDs may be empty at start (a spawned command registers later), so
	// the tgid filter is always on unless everything is a target.
	if !t.All {
		cfg.filter |= filterTgid
	}
	if len(t.TIDs) > 0 {
		cfg.filter |= filterTid
	}
	if t.Cgroup != "" {
		cfg.filter |= filterCgroup
	}
	if t.Comm != "" {
		if len(t.Comm) > 15 {
			return cfg, fmt.Errorf("--comm %q: the kernel keeps at most 15 characters of a command name", t.Comm)
		}
		cfg.filter |= filterComm
		cfg.comm = t.Comm
	}
	return cfg, nil
}

// openCgroup opens a cgroup v2 directory for the cgroup filter map.
func openCgroup(path string) (*os.File, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return nil, fmt.Errorf("--cgroup %s: %w", path, err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return nil, fmt.Errorf("--cgroup %s: not a cgroup v2 directory (cgroup v1 hierarchies cannot be matched by BPF; try the same group under the unified hierarchy, e.g. /sys/fs/cgroup/unified/...)", path)
	}
	return os.Open(filepath.Clean(path))
}
