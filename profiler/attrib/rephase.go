package attrib

import (
	"math/rand/v2"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// docs/known-issues.md, "Threads on two CPUs locked to the sampling
// timers": every CPU's cpu-clock timer runs on a grid of its own period, fixed when
// the event was enabled, and the CPUs' grids keep the phases they started
// with. A workload whose threads on two CPUs are coupled can lock onto
// them: on our PVM guests a sample on the sender's CPU stalls the sender,
// the receiver on the other CPU drains its socket and sleeps 0-30 µs
// before that sample is due, and the receiver's own timer, enabled 20-40
// µs after, fell in its sleep for up to a third of its time on CPU
// (TestSampledWriteRead: 563 ms of samples for 830 ms on CPU, while a
// bpftrace sampler at 997 Hz beside it counted 854 ms). The rephaser
// restarts each CPU's timer at its own random moments (PERF_EVENT_IOC_PERIOD
// with the same period starts the period afresh from now), so that no
// phase between the CPUs' samples lasts. Each restart drops the partial
// period before it, half a period on average: 0.7% of the samples at the
// rates below, at random, so the shares the samples give keep no bias.

// rephaseEvery is the mean time between two restarts of one CPU's timer;
// rephaseMaxRate bounds the restarts per second over all CPUs, each an IPI
// to its CPU.
const (
	rephaseEvery   = 25 * time.Millisecond
	rephaseMaxRate = 400
)

type rephaser struct {
	stop, done chan struct{}
}

// startRephasing restarts the timer of each of fds (cpu-clock events of
// periodNS) at independent random moments until stop.
func startRephasing(fds []int, periodNS uint64) *rephaser {
	r := &rephaser{stop: make(chan struct{}), done: make(chan struct{})}
	mean := max(rephaseEvery, time.Duration(len(fds))*time.Second/rephaseMaxRate)
	// Uniform on [mean/2, 3·mean/2): far wider than a period, so the CPUs'
	// restart moments are independent of each other's grids.
	next := func(now time.Time) time.Time { return now.Add(mean/2 + rand.N(mean)) }
	due := make([]time.Time, len(fds))
	now := time.Now()
	for i := range due {
		due[i] = next(now)
	}
	go func() {
		defer close(r.done)
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for {
			first := 0
			for i := range due {
				if due[i].Before(due[first]) {
					first = i
				}
			}
			timer.Reset(time.Until(due[first]))
			select {
			case <-r.stop:
				return
			case now := <-timer.C:
				period := periodNS
				// An error leaves that CPU's grid as it was: the samples
				// stay right, only less guarded against lockstep.
				_, _, _ = unix.Syscall(unix.SYS_IOCTL, uintptr(fds[first]), unix.PERF_EVENT_IOC_PERIOD, uintptr(unsafe.Pointer(&period)))
				due[first] = next(now)
			}
		}
	}()
	return r
}

// close stops the restarts and returns once none is under way, so that
// the events' fds can be closed.
func (r *rephaser) close() {
	close(r.stop)
	<-r.done
}
