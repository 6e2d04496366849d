package workload

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// socketCookie returns the kernel's unique id of a socket (SO_COOKIE). The
// kernel assigns it on first request, so asking also makes it visible to
// BPF programs that read sk->sk_cookie (the softirq owner tracker).
func socketCookie(fd int) (uint64, error) {
	c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_COOKIE)
	if err != nil {
		return 0, fmt.Errorf("SO_COOKIE: %w", err)
	}
	return c, nil
}
