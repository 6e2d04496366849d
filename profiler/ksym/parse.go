// Package ksym is zcprof's one reader of /proc/kallsyms: the set of kernel
// function names (for doctor's attach checks), an address-sorted table of
// text symbols that symbolizes kernel stacks (for the sampling backend),
// and the addresses of named vmlinux symbols (Addrs, for the byte-class
// object's constants).
package ksym

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/caps"
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

// Parse reads "addr type name [module]" lines (scan). Addresses may be zeroed by
// kptr_restrict; the names are still complete.
func Parse(r io.Reader) (*Table, error) {
	t := &Table{Names: Names{}}
	err := scan(r, func(l line) {
		switch l.typ {
		case "T", "t", "W", "w":
		default:
			return
		}
		t.Names[l.name] = true
		if !l.addrOK {
			return
		}
		t.total++
		if l.addr == 0 {
			t.zeroed++
			return
		}
		t.syms = append(t.syms, Symbol{Addr: l.addr, Name: l.name, Module: l.module})
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(t.syms, func(i, j int) bool { return t.syms[i].Addr < t.syms[j].Addr })
	t.syms = collapseAliases(t.syms)
	return t, nil
}

// collapseAliases keeps one name per address: memcpy, __memcpy and
// __pi_memcpy share one (docs/known-issues.md), and a stable choice keeps
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
		return fmt.Errorf("%s shows every address as 0: %s", Path, hiddenWhy())
	}
	return nil
}

// hiddenWhy says why kallsyms hides addresses from this process, after the
// kernel's kallsyms_show_value: kptr_restrict=2 hides them from everyone;
// otherwise the reader needs CAP_SYSLOG (kptr_restrict=0 also shows them
// to all when perf_event_paranoid <= 1).
func hiddenWhy() string {
	b, _ := os.ReadFile("/proc/sys/kernel/kptr_restrict")
	if strings.TrimSpace(string(b)) == "2" {
		return "kernel.kptr_restrict=2 hides them from everyone (sysctl kernel.kptr_restrict=1)"
	}
	if !caps.Effective(unix.CAP_SYSLOG) {
		return "reading kernel addresses needs CAP_SYSLOG, which this process lacks"
	}
	return "kernel.kptr_restrict hides them (sysctl kernel.kptr_restrict=1)"
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

func parseAddr(s string) (uint64, error) { return strconv.ParseUint(s, 16, 64) }
