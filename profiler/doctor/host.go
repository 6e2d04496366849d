package doctor

// Host is what every zcprof result records about the machine.
type Host struct {
	Kernel            string
	CPUs              int
	HZ                int // CONFIG_HZ, 0 when the config cannot be read
	IRQTimeAccounting bool
}

// ReadHost reads the kernel release, online CPUs and the two config options
// that change what times() and schedstat mean.
func ReadHost() Host {
	h := Host{Kernel: kernelRelease()}
	if cpus, err := onlineCPUs(); err == nil {
		h.CPUs = len(cpus)
	}
	cfg, _, _ := readKernelConfig(h.Kernel)
	h.HZ = configHZ(cfg)
	h.IRQTimeAccounting = configEnabled(cfg, "CONFIG_IRQ_TIME_ACCOUNTING")
	return h
}
