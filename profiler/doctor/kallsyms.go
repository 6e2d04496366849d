package doctor

import "github.com/zcprof/zcprof/profiler/ksym"

// kallsyms is the set of function names in /proc/kallsyms (parsing lives in
// profiler/ksym, shared with the sampling backend's symbolizer).
type kallsyms = ksym.Names

// readKallsyms reads the names; addresses hidden by kptr_restrict do not
// matter here.
func readKallsyms() (kallsyms, error) {
	t, err := ksym.Read()
	if err != nil {
		return nil, err
	}
	return t.Names, nil
}
