// Package ksym reads /proc/kallsyms: the set of kernel function names (for
// doctor's attach checks) and an address-sorted table of text symbols that
// symbolizes kernel stacks (for the sampling backend).
package ksym

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Path is where the kernel publishes its symbols.
const Path = "/proc/kallsyms"

// Names is the set of function names (text symbols; module symbols keep
// their bare name).
type Names map[string]bool

// Symbol is one text symbol.
type Symbol struct {
	Addr   uint64
	Name   string
	Module string // "" for vmlinux
}

// Table holds the text symbols of one kallsyms reading.
type Table struct {
	Names Names
	syms  []Symbol // by address; aliases at one address collapsed (see pick)
	// zeroed counts symbols whose address reads as 0: kptr_restrict hides
	// addresses from this reader.
	zeroed, total int
}

// Read parses /proc/kallsyms.
func Read() (*Table, error) {
	f, err := os.Open(Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f)
}

// Parse reads "addr type name [module]" lines. Addresses may be zeroed by
// kptr_restrict; the names are still complete.
func Parse(r io.Reader) (*Table, error) {
	t := &Table{Names: Names{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		switch f[1] {
		case "T", "t", "W", "w":
		default:
			continue
		}
		t.Names[f[2]] = true
		addr, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			continue
		}
		t.total++
		if addr == 0 {
			t.zeroed++
			continue
		}
		s := Symbol{Addr: addr, Name: f[2]}
		if len(f) > 3 {
			s.Module = strings.Trim(f[3], "[]")
		}
		t.syms = append(t.syms, s)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.SliceStable(t.syms, func(i, j int) bool { return t.syms[i].Addr < t.syms[j].Addr })
	t.syms = collapseAliases(t.syms)
	return t, nil
}

// collapseAliases keeps one name per address: memcpy, __memcpy and
// __pi_memcpy share one (KERNEL.md §11.12), and a stable choice keeps
// recorded fixtures comparable across runs.
func collapseAliases(syms []Symbol) []Symbol {
	out := syms[:0]
	for _, s := range syms {
		if n := len(out); n > 0 && out[n-1].Addr == s.Addr {
			if better(s.Name, out[n-1].Name) {
				out[n-1] = s
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// better prefers fewer leading underscores, then the shorter and
// lexically smaller name.
func better(a, b string) bool {
	ua, ub := len(a)-len(strings.TrimLeft(a, "_")), len(b)-len(strings.TrimLeft(b, "_"))
	if ua != ub {
		return ua < ub
	}
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

// Addressable reports whether addresses are visible; if not, the error says
// why in one line.
func (t *Table) Addressable() error {
	if t.total == 0 {
		return fmt.Errorf("%s lists no text symbols", Path)
	}
	if len(t.syms) == 0 {
		return fmt.Errorf("%s shows every address as 0: kernel.kptr_restrict hides them (run as root with kptr_restrict <= 1, e.g. sysctl kernel.kptr_restrict=1)", Path)
	}
	return nil
}

// Len is the number of distinct symbol addresses.
func (t *Table) Len() int { return len(t.syms) }

// WithPrefix lists the names starting with prefix, skipping compiler
// clones (".cold", ".isra.0", ...) that fprobe cannot attach to.
func (n Names) WithPrefix(prefix string) []string {
	var out []string
	for name := range n {
		if strings.HasPrefix(name, prefix) && !strings.Contains(name, ".") {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
