package testenv

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TCPPair returns a connected loopback TCP pair as raw descriptors (client,
// server), closed when the test ends: for tests that make the syscalls
// themselves.
func TCPPair(t testing.TB) (client, server int) {
	t.Helper()
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(ln, 1); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(ln)
	if err != nil {
		t.Fatal(err)
	}
	if client, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(client) })
	if err := unix.Connect(client, sa); err != nil {
		t.Fatal(err)
	}
	if server, _, err = unix.Accept4(ln, unix.SOCK_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(server) })
	return client, server
}
