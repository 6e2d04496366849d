package bpf

// Function-exact attribution: fentry/fexit (and kprobe/kretprobe twins) on the key functions.
//go:generate go tool bpf2go -tags linux -target amd64 -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" Funcexact funcexact.bpf.c -- -I.
