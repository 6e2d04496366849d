package doctor

import (
	"bufio"
	"io"
	"os"
	"sort"
	"strings"
)

// kallsyms is the set of function names in /proc/kallsyms (text symbols
// only; module symbols keep their bare name).
type kallsyms map[string]bool

func readKallsyms() (kallsyms, error) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseKallsyms(f)
}

// parseKallsyms reads "addr type name [module]" lines. Addresses may be
// zeroed by kptr_restrict; names are all doctor needs.
func parseKallsyms(r io.Reader) (kallsyms, error) {
	syms := kallsyms{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		switch f[1] {
		case "T", "t", "W", "w":
			syms[f[2]] = true
		}
	}
	return syms, sc.Err()
}

// withPrefix lists the symbols starting with prefix, skipping compiler
// clones (".cold", ".isra.0", ...) that fprobe cannot attach to.
func (k kallsyms) withPrefix(prefix string) []string {
	var out []string
	for name := range k {
		if strings.HasPrefix(name, prefix) && !strings.Contains(name, ".") {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
