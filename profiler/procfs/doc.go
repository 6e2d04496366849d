// Package procfs reads the per-thread figures the kernel itself keeps:
// sum_exec_runtime (schedstat) and the tick-based utime/stime that times(),
// getrusage and /proc/PID/stat report.
package procfs
