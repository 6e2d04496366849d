package workload

import (
	"net"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// txDevice names the device a connected socket's bytes leave through (the
// interface holding its local address) and whether that device has
// scatter-gather on. Without it, TCP still pins MSG_ZEROCOPY pages (GSO
// in software gives every TCP route SG), and the device's software
// segmentation then copies every pinned byte into linear segments at
// transmit while the kernel flags only some completions COPIED. Run on
// the socket's own thread (its network namespace). ok is false when
// either cannot be read.
func txDevice(fd int) (name string, sg, ok bool) {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return "", false, false
	}
	local, _, isIP := addrPort(sa)
	if !isIP {
		return "", false, false
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return "", false, false
	}
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			n, isNet := a.(*net.IPNet)
			if !isNet {
				continue
			}
			if ip, valid := netip.AddrFromSlice(n.IP); valid && ip.Unmap() == local {
				sg, ok := ethtoolFlag(fd, ifc.Name, unix.ETHTOOL_GSG)
				return ifc.Name, sg, ok
			}
		}
	}
	return "", false, false
}

// ethtoolFlag reads one legacy ethtool on/off setting (ETHTOOL_GSG, ...)
// through any socket of the device's namespace.
func ethtoolFlag(fd int, dev string, cmd uint32) (on, ok bool) {
	if len(dev) >= unix.IFNAMSIZ {
		return false, false
	}
	value := struct{ cmd, data uint32 }{cmd: cmd}
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data unsafe.Pointer
		_    [16]byte // the rest of the ifreq union
	}
	copy(ifr.name[:], dev)
	ifr.data = unsafe.Pointer(&value)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return false, false
	}
	return value.data != 0, true
}

// readTxDevice notes the stream's egress device and whether it lacks
// scatter-gather. It runs at setup, before the measured interval (the
// netlink dump would be billed to the sender's thread).
func (s *txStream) readTxDevice() {
	if name, sg, ok := txDevice(s.fd); ok {
		s.res.TxDevice = name
		s.res.TxNoSG = s.res.TxNoSG || !sg
	}
}
