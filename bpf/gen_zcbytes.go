package bpf

// Byte classes and zero-copy outcomes from tracepoints: send decisions, deferred copies, completions, retransmissions.
//go:generate go tool bpf2go -tags linux -target amd64 -cc clang -cflags "-O2 -g -Wall -Werror -mcpu=v3" Zcbytes zcbytes.bpf.c -- -I.
