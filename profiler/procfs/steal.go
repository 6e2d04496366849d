package procfs

import (
	"os"
	"strconv"
	"strings"
)

// HostStealNS is the time the hypervisor stole from all CPUs since boot,
// from the "cpu" line of /proc/stat (0 when it cannot be read). It comes in
// USER_HZ ticks of 10 ms: good for a bound, not for a figure.
func HostStealNS() uint64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	return parseStealNS(string(b))
}

// parseStealNS reads the 8th value (steal) of the aggregate "cpu" line.
func parseStealNS(stat string) uint64 {
	for _, line := range strings.Split(stat, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "cpu" {
			continue
		}
		ticks, err := strconv.ParseUint(f[8], 10, 64)
		if err != nil {
			return 0
		}
		return ticks * (1e9 / UserHZ)
	}
	return 0
}
