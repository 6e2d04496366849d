package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/kernel"
)

// registerBackends adds the flags that choose how `profile` and `run`
// measure; they mean the same in both.
func registerBackends(f *pflag.FlagSet, accounting, byteClasses *string, attr *attrib.Options) {
	f.StringVar(accounting, "accounting", "auto", "accounting backend: auto, tp_btf or raw_tp")
	f.StringVar(&attr.Backend, "backend", "auto", "attribution backend (categories inside each path): auto, sampling, fentry, kprobe or none")
	f.IntVar(&attr.SampleHz, "sample-hz", attrib.DefaultHz, fmt.Sprintf("samples per second per CPU of the sampling backend (the copy-share sampler beside fentry or kprobe unwinds every sample: at most %d)", attrib.FullStackHz))
	f.StringVar(byteClasses, "byte-classes", "auto", "how send decisions (copy, splice, zero-copy) are traced: auto, tcp_sendmsg_locked (6.16+), syscall (6.3+), syscall_return or off")
}

// validateBackends checks --accounting and --byte-classes before anything
// is loaded, against the library's own lists.
func validateBackends(accounting, byteClasses string) error {
	if err := kernel.Choose("--accounting", "", accounting, kernel.AccountingChoices()); err != nil {
		return err
	}
	return kernel.Choose("--byte-classes", "", byteClasses, byteclass.Choices())
}
