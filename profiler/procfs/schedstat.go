package procfs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Root is the proc mount; tests point it at fixtures.
var Root = "/proc"

// ParseSchedstat returns the first field of /proc/PID/task/TID/schedstat:
// se.sum_exec_runtime in nanoseconds (it includes softirq and hardirq time
// spent on the task's stack unless CONFIG_IRQ_TIME_ACCOUNTING is set).
func ParseSchedstat(data string) (uint64, error) {
	fields := strings.Fields(data)
	if len(fields) < 1 {
		return 0, fmt.Errorf("schedstat: empty")
	}
	return strconv.ParseUint(fields[0], 10, 64)
}

// ThreadRuntime reads a thread's sum_exec_runtime in nanoseconds.
func ThreadRuntime(pid, tid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/task/%d/schedstat", Root, pid, tid))
	if err != nil {
		return 0, err
	}
	return ParseSchedstat(string(b))
}
