package kernel

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// sendTCP writes once over loopback so that tcp_sendmsg runs in this
// process. No accept: the handshake completes in the backlog and the write
// is queued, which is all the probes need.
func sendTCP() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return
	}
	c.Write(make([]byte, 4096))
	c.Close()
}

// busyInKernel keeps this thread in the kernel (clear_user on /dev/zero
// reads) for d, so that cpu-clock samples land with a kernel stack.
func busyInKernel(d time.Duration) {
	fd, err := unix.Open("/dev/zero", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	buf := make([]byte, 256<<10)
	for end := time.Now().Add(d); time.Now().Before(end); {
		unix.Read(fd, buf)
	}
}

// sleepBriefly lets the scheduler switch a few times (sched_switch probes).
func sleepBriefly() { time.Sleep(20 * time.Millisecond) }
