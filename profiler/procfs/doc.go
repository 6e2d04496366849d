// Package procfs reads the figures the kernel itself keeps in /proc: per
// thread, sum_exec_runtime (schedstat) and the tick-based utime/stime that
// times(), getrusage and /proc/PID/stat report; for the host, the time the
// hypervisor stole (/proc/stat, steal.go).
package procfs
