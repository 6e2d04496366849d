package procfs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// UserHZ is the unit of utime/stime in /proc/PID/stat. Linux fixes it at
// 100 for user space whatever CONFIG_HZ is, hence times()' 10 ms grain.
const UserHZ = 100

// TaskStat is the part of /proc/PID/task/TID/stat zcprof uses.
type TaskStat struct {
	Comm  string
	State byte
	PPid  int
	// UtimeNS and StimeNS are what times() would report: the kernel's
	// cputime_adjust() split of sum_exec_runtime by tick samples, in
	// USER_HZ ticks converted to nanoseconds.
	UtimeNS, StimeNS uint64
	// StartTicks is when the task started, in clock ticks after boot
	// (field 22): with the tid, it tells a task from a later one that
	// reused its tid. 0 when the line is shorter.
	StartTicks uint64
}

// ParseStat parses one stat line. The comm field may contain spaces and
// parentheses, so fields are counted after its last ')'.
func ParseStat(data string) (TaskStat, error) {
	var st TaskStat
	open := strings.IndexByte(data, '(')
	closing := strings.LastIndexByte(data, ')')
	if open < 0 || closing < open {
		return st, fmt.Errorf("stat: malformed line")
	}
	st.Comm = data[open+1 : closing]
	rest := strings.Fields(data[closing+1:])
	// rest[0] is field 3 (state); utime is field 14, stime field 15.
	if len(rest) < 13 {
		return st, fmt.Errorf("stat: %d fields after comm, want at least 13", len(rest))
	}
	st.State = rest[0][0]
	ppid, err := strconv.Atoi(rest[1])
	if err != nil {
		return st, fmt.Errorf("stat: ppid: %w", err)
	}
	st.PPid = ppid
	ut, err := strconv.ParseUint(rest[11], 10, 64)
	if err != nil {
		return st, fmt.Errorf("stat: utime: %w", err)
	}
	stime, err := strconv.ParseUint(rest[12], 10, 64)
	if err != nil {
		return st, fmt.Errorf("stat: stime: %w", err)
	}
	tick := uint64(time.Second / UserHZ)
	st.UtimeNS, st.StimeNS = ut*tick, stime*tick
	if len(rest) > 19 {
		if st.StartTicks, err = strconv.ParseUint(rest[19], 10, 64); err != nil {
			return st, fmt.Errorf("stat: starttime: %w", err)
		}
	}
	return st, nil
}

// ReadTaskStat reads /proc/PID/task/TID/stat.
func ReadTaskStat(pid, tid int) (TaskStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/task/%d/stat", Root, pid, tid))
	if err != nil {
		return TaskStat{}, err
	}
	return ParseStat(string(b))
}
