package bpf

// Statistical attribution: perf_event cpu-clock samples of kernel stacks with the accounting context.
//go:generate go tool bpf2go -tags linux -target amd64 -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" Sampler sampler.bpf.c -- -I.
