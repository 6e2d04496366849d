package bpf

// The probe floor (make bench) and the dispatch calibration (profiler/calibrate.go).
//go:generate go tool bpf2go -tags linux -target amd64 -cc clang -cflags "-O2 -g -Wall -Werror" Floor floor.bpf.c -- -I.
