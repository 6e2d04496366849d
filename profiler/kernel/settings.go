package kernel

import (
	"errors"
	"os"
	"strings"

	"github.com/zcprof/zcprof/profiler/pseudofs"
)

const lockdownPath = "/sys/kernel/security/lockdown"

// Lockdown returns the active lockdown mode. securityfs is not always
// mounted (containers, fresh machines); doctor mounts it first when it
// may, and says so when it could not.
func Lockdown() string {
	b, err := os.ReadFile(lockdownPath)
	switch {
	case err == nil:
		if m := parseLockdown(string(b)); m != "" {
			return m
		}
		return "unknown (unparsable " + lockdownPath + ")"
	case errors.Is(err, os.ErrNotExist):
		if _, err := os.Stat("/sys/kernel/security"); err == nil && !pseudofs.Securityfs.Available() {
			return "unknown (securityfs not mounted)"
		}
		return "none (no lockdown LSM)"
	default:
		return "unknown (" + err.Error() + ")"
	}
}

// parseLockdown picks the bracketed mode out of "none [integrity] confidentiality".
func parseLockdown(s string) string {
	for _, f := range strings.Fields(s) {
		if len(f) > 2 && f[0] == '[' && f[len(f)-1] == ']' {
			return f[1 : len(f)-1]
		}
	}
	return ""
}

// Sysctl returns a /proc/sys value (e.g. "kernel.perf_event_paranoid"),
// "absent", or "unknown (...)".
func Sysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "absent"
		}
		return "unknown (" + err.Error() + ")"
	}
	return strings.TrimSpace(string(b))
}
