// Package bpf holds zcprof's BPF programs (C, one file per concern) and the
// loaders bpf2go generates from them. The generated .go and .o files are
// committed so that `go build` needs no clang; `make generate` rebuilds them.
package bpf
