package run

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/zcprof/zcprof/workload"
)

// ParsePortRange reads --data-port: "P" or "P-Q" (1..65535), "" for
// ephemeral ports.
func ParsePortRange(s string) (workload.PortRange, error) {
	if s == "" {
		return workload.PortRange{}, nil
	}
	lo, hi, isRange := strings.Cut(s, "-")
	if !isRange {
		hi = lo
	}
	a, err1 := strconv.Atoi(lo)
	b, err2 := strconv.Atoi(hi)
	if err1 != nil || err2 != nil || a < 1 || b > 65535 || a > b {
		return workload.PortRange{}, fmt.Errorf("--data-port %q: want PORT or LOW-HIGH within 1-65535", s)
	}
	return workload.PortRange{Lo: a, Hi: b}, nil
}
