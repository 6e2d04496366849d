package workload

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// tcpCANameMax is TCP_CA_NAME_MAX less the NUL.
const tcpCANameMax = 15

func validCongestion(name string) error {
	if name == "" {
		return nil
	}
	ok := len(name) <= tcpCANameMax
	for _, r := range name {
		ok = ok && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}
	if !ok {
		return fmt.Errorf("--congestion %q: not a congestion control name (lower case letters, digits, _ or -, at most %d)", name, tcpCANameMax)
	}
	return nil
}

// setCongestion sets the socket's congestion control when name is given
// and returns the one the socket uses: reports name it, because pacing
// (bbr) moves a sender's CPU into timer work.
func setCongestion(fd int, name string) (string, error) {
	if name != "" {
		// As root the kernel loads tcp_<name> on demand, so names missing
		// from tcp_available_congestion_control may still work.
		if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, name); err != nil {
			if errors.Is(err, unix.ENOENT) {
				avail, _ := os.ReadFile("/proc/sys/net/ipv4/tcp_available_congestion_control")
				return "", fmt.Errorf("congestion control %q is not available on this kernel (loaded: %s)", name, strings.TrimSpace(string(avail)))
			}
			return "", fmt.Errorf("congestion control %q: %w", name, err)
		}
	}
	got, err := unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	if err != nil {
		return "", fmt.Errorf("read congestion control: %w", err)
	}
	return got, nil
}
