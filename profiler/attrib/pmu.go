package attrib

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pmuUnavailable says why per-path cycles and instructions cannot be
// counted ("" when a hardware PMU answers). VMs without a virtual PMU have
// none: perf then falls back to cpu-clock, and so does the sampler.
func pmuUnavailable() string {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_HARDWARE,
		Config: unix.PERF_COUNT_HW_CPU_CYCLES,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bits:   unix.PerfBitDisabled | unix.PerfBitExcludeHv,
	}
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		cpuPMU := "no cpu PMU in /sys/bus/event_source/devices"
		if _, serr := os.Stat("/sys/bus/event_source/devices/cpu"); serr == nil {
			cpuPMU = "a cpu PMU is listed"
		}
		return fmt.Sprintf("no hardware PMU: perf_event_open(cycles) failed with %v (%s); sampling uses cpu-clock and no cycles or instructions per byte are reported", err, cpuPMU)
	}
	unix.Close(fd)
	return "hardware PMU present, but per-path cycles and instructions are not implemented yet"
}
