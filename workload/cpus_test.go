package workload

import "golang.org/x/sys/unix"

func cpusAllowed() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var out []int
	for i := range 1024 {
		if set.IsSet(i) {
			out = append(out, i)
		}
	}
	return out
}
