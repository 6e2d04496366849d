package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/zcprof/zcprof/profiler/attrib"
	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/kernel"
)

// registerBackends adds the flags that choose how `profile` and `run`
// measure; they mean the same in both.
func registerBackends(f *pflag.FlagSet, accounting, byteClasses *string, attr *attrib.Options) {
	f.StringVar(accounting, "accounting", kernel.Auto, "accounting backend: "+kernel.OrList(kernel.AccountingChoices()))
	f.StringVar(&attr.Backend, "backend", kernel.Auto, "attribution backend (categories inside each path): "+kernel.OrList(kernel.AttributionChoices()))
	f.Var(sampleHz{&attr.SampleHz}, "sample-hz", fmt.Sprintf("samples per second per CPU of the sampling backend; auto: %d, lower where a sample's timer interrupt is dear (within %g%% of a busy CPU) (the copy-share sampler beside fentry or kprobe unwinds every sample: at most %d)", attrib.DefaultHz, 100*attrib.SampleBudget, attrib.FullStackHz))
	f.StringVar(byteClasses, "byte-classes", kernel.Auto, "how send decisions (copy, splice, zero-copy) are traced: "+kernel.OrList(byteclass.Choices())+" (tcp_sendmsg_locked needs 6.16+, syscall 6.3+)")
}

// validateBackends checks --accounting and --byte-classes before anything
// is loaded, against the library's own lists.
func validateBackends(accounting, byteClasses string) error {
	if err := kernel.Choose("--accounting", "", accounting, kernel.AccountingChoices()); err != nil {
		return err
	}
	return kernel.Choose("--byte-classes", "", byteClasses, byteclass.Choices())
}

// sampleHz is --sample-hz: auto (0 in attrib.Options) or a rate.
type sampleHz struct{ hz *int }

func (s sampleHz) String() string {
	if s.hz == nil || *s.hz == 0 {
		return "auto"
	}
	return strconv.Itoa(*s.hz)
}

func (s sampleHz) Set(v string) error {
	if v == "auto" {
		*s.hz = 0
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > attrib.MaxHz {
		return fmt.Errorf("must be auto or between 1 and %d", attrib.MaxHz)
	}
	*s.hz = n
	return nil
}

func (s sampleHz) Type() string { return "hz" }
