package ksym

import (
	"bufio"
	"io"
	"os"
	"strings"
)

// line is one /proc/kallsyms line: "addr type name [module]".
type line struct {
	addr      uint64
	addrOK    bool // the address field parsed (0 when kptr_restrict hides it)
	typ, name string
	module    string // "" for vmlinux
	hasModule bool
}

// scan calls fn for every well-formed line of r.
func scan(r io.Reader, fn func(line)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		l := line{typ: f[1], name: f[2]}
		if a, err := parseAddr(f[0]); err == nil {
			l.addr, l.addrOK = a, true
		}
		if len(f) > 3 {
			l.module, l.hasModule = strings.Trim(f[3], "[]"), true
		}
		fn(l)
	}
	return sc.Err()
}

// Addrs looks up vmlinux symbols by name in /proc/kallsyms, each with the
// symbol types it may have (e.g. "Tt" for text, "DdBb" for data): a symbol
// that is absent, hidden by kptr_restrict, of another type or in a module
// has no entry. Data symbols are not in Table, which keeps text only.
func Addrs(want map[string]string) map[string]uint64 {
	f, err := os.Open(Path)
	if err != nil {
		return map[string]uint64{}
	}
	defer f.Close()
	return addrsFrom(f, want)
}

func addrsFrom(r io.Reader, want map[string]string) map[string]uint64 {
	out := map[string]uint64{}
	_ = scan(r, func(l line) {
		types, ok := want[l.name]
		if !ok || l.hasModule || !strings.Contains(types, l.typ) || l.addr == 0 {
			return
		}
		out[l.name] = l.addr
	})
	return out
}

// AddressesVisible reports whether /proc/kallsyms shows this process real
// addresses: kptr_restrict and CAP_SYSLOG decide (hiddenWhy says which).
// Hidden, every address reads 0; shown, the first symbols may still be 0:
// before 6.15 x86 lists its per-CPU symbols first, at their offsets in the
// per-CPU area (fixed_percpu_data at 0). So any non-zero address in the
// first lines tells.
func AddressesVisible() bool {
	f, err := os.Open(Path)
	if err != nil {
		return false
	}
	defer f.Close()
	visible := false
	_ = scan(io.LimitReader(f, 4096), func(l line) {
		visible = visible || l.addrOK && l.addr != 0
	})
	return visible
}
