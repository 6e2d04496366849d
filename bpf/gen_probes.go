//go:build linux

package bpf

import "github.com/cilium/ebpf"

// Feature probes for `zcprof doctor`: one trivial program per attach kind.
//go:generate go tool bpf2go -tags linux -target amd64 -cc clang -cflags "-O2 -g -Wall -Werror" probes probes.bpf.c -- -I.

// ProbesSpec returns the doctor's probe programs (bpf/probes.bpf.c) as a
// spec, so that each program can be loaded and retargeted on its own: a
// kernel that refuses one attach kind must not fail the others.
func ProbesSpec() (*ebpf.CollectionSpec, error) { return loadProbes() }
