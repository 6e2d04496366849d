package bpf

// Exact per-thread accounting: syscalls, sched_switch, softirq, hardirq, fork/exit.
//go:generate go tool bpf2go -tags linux -target amd64 -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" -type zc_path_counts Accounting accounting.bpf.c -- -I.
