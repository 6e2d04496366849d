package run

import (
	"fmt"
	"github.com/zcprof/zcprof/workload"
	"math"
	"runtime"
	"strconv"
	"strings"
)

// ParseSize reads a byte count: a positive integer with an optional binary
// suffix K, M or G (also KiB, MiB, GiB; case-insensitive).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	up := strings.ToUpper(t)
	for _, suf := range []struct {
		s string
		m int64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if strings.HasSuffix(up, suf.s) {
			mult = suf.m
			t = t[:len(t)-len(suf.s)]
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || t == "" {
		return 0, fmt.Errorf("%q is not a size (use e.g. 65536, 64K, 1M)", s)
	}
	if n <= 0 {
		return 0, fmt.Errorf("size %q must be positive", s)
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
}

// ParseSizes reads a comma-separated list of sizes.
func ParseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range SplitList(s) {
		n, err := ParseSize(f)
		if err != nil {
			return nil, err
		}
		if n > math.MaxInt32 {
			return nil, fmt.Errorf("size %q is too large", f)
		}
		out = append(out, int(n))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no size given")
	}
	return out, nil
}

// ParseInts reads a comma-separated list of positive integers (--streams).
func ParseInts(s string) ([]int, error) {
	var out []int
	for _, f := range SplitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		if n <= 0 {
			return nil, fmt.Errorf("%d must be positive", n)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no value given")
	}
	return out, nil
}

// ParseCPUs reads --cpus S:R, the sender's and the receiver's CPU; "" means
// no pinning (-1, -1). A CPU is checked against this machine's where its
// role runs here (here says which); a peer checks its own.
func ParseCPUs(s string, here func(workload.Role) bool) (sender, receiver int, err error) {
	if strings.TrimSpace(s) == "" {
		return -1, -1, nil
	}
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("--cpus %q: want SENDER:RECEIVER, e.g. 0:1", s)
	}
	n := runtime.NumCPU()
	var cpus [2]int
	for i, f := range []string{a, b} {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 0 {
			return 0, 0, fmt.Errorf("--cpus %q: %q is not a CPU number", s, f)
		}
		role := []workload.Role{workload.RoleSender, workload.RoleReceiver}[i]
		if c >= n && here(role) {
			return 0, 0, fmt.Errorf("--cpus %q: %s CPU %d out of range (this machine has CPUs 0..%d)", s, role, c, n-1)
		}
		cpus[i] = c
	}
	return cpus[0], cpus[1], nil
}

// ParseCI reads --ci LEVEL,WIDTH: a confidence level in percent (e.g. 95)
// and the largest interval width in percent of the mean (e.g. 5), as
// netperf's -I.
func ParseCI(s string) (*CI, error) {
	a, b, ok := strings.Cut(s, ",")
	if !ok {
		return nil, fmt.Errorf("--ci %q: want LEVEL,WIDTH in percent, e.g. 95,5", s)
	}
	level, err1 := strconv.ParseFloat(strings.TrimSpace(a), 64)
	width, err2 := strconv.ParseFloat(strings.TrimSpace(b), 64)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("--ci %q: want LEVEL,WIDTH in percent, e.g. 95,5", s)
	}
	if !(level >= 50 && level < 100) {
		return nil, fmt.Errorf("--ci %q: confidence level must be at least 50 and below 100 (percent)", s)
	}
	if !(width > 0 && width <= 100) {
		return nil, fmt.Errorf("--ci %q: interval width must be above 0 and at most 100 (percent of the mean)", s)
	}
	return &CI{Level: level / 100, WidthPct: width}, nil
}

// SplitList is a comma-separated flag value (--method, --size, ...)
// as its items, blanks dropped.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
