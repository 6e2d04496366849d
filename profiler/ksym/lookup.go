package ksym

import (
	"fmt"
	"sort"
)

// maxSymbolSize bounds how far past a symbol's start an address may be and
// still belong to it: past the last symbol of a region (the end of vmlinux
// text, a module's last function) the next start is far away.
const maxSymbolSize = 1 << 20

// Lookup returns the symbol containing addr and the offset into it.
func (t *Table) Lookup(addr uint64) (Symbol, uint64, bool) {
	i := sort.Search(len(t.syms), func(i int) bool { return t.syms[i].Addr > addr }) - 1
	if i < 0 {
		return Symbol{}, 0, false
	}
	s := t.syms[i]
	if addr-s.Addr >= maxSymbolSize {
		return Symbol{}, 0, false
	}
	return s, addr - s.Addr, true
}

// Name is the frame name of addr: the function, "name [module]" for a
// module, or the hex address when unknown.
func (t *Table) Name(addr uint64) string {
	s, _, ok := t.Lookup(addr)
	if !ok {
		return fmt.Sprintf("0x%x", addr)
	}
	if s.Module != "" {
		return s.Name + " [" + s.Module + "]"
	}
	return s.Name
}
