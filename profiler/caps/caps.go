// Package caps reads this process's effective capabilities and names the
// ones an operation lacks. Root is not assumed to have them: a root shell
// in a container, or under capsh/setpriv, may lack any.
package caps

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// Cap is one capability, by its number (unix.CAP_BPF, ...).
type Cap int

// Names of the capabilities zcprof asks for.
var names = map[Cap]string{
	unix.CAP_BPF:             "CAP_BPF",
	unix.CAP_PERFMON:         "CAP_PERFMON",
	unix.CAP_SYSLOG:          "CAP_SYSLOG",
	unix.CAP_SYS_ADMIN:       "CAP_SYS_ADMIN",
	unix.CAP_NET_ADMIN:       "CAP_NET_ADMIN",
	unix.CAP_SYS_RESOURCE:    "CAP_SYS_RESOURCE",
	unix.CAP_DAC_READ_SEARCH: "CAP_DAC_READ_SEARCH",
	unix.CAP_KILL:            "CAP_KILL",
}

func (c Cap) String() string {
	if n, ok := names[c]; ok {
		return n
	}
	return fmt.Sprintf("capability %d", int(c))
}

// Effective reports whether c is in this thread's effective set (all
// threads of a Go program share it unless one changes its own).
func Effective(c Cap) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData // version 3 uses two 32-bit words
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(uint(c)%32)) != 0
}

// Missing lists those of want that are not effective. The kernel accepts
// CAP_SYS_ADMIN for CAP_BPF and CAP_PERFMON (bpf_capable, perfmon_capable),
// so with it neither is missing.
func Missing(want ...Cap) []Cap {
	var out []Cap
	for _, c := range want {
		if Effective(c) {
			continue
		}
		if (c == unix.CAP_BPF || c == unix.CAP_PERFMON) && Effective(unix.CAP_SYS_ADMIN) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// Join names caps as "CAP_A and CAP_B" (or "CAP_A, CAP_B and CAP_C").
func Join(cs []Cap) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = c.String()
	}
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
