package bpf

import _ "embed"

// AccountingHeader is bpf/accounting.h as compiled into the accounting
// object: the tests check the Go mirrors of its constants against it, in
// a vmtest guest too, where the source tree is not at hand.
//
//go:embed accounting.h
var AccountingHeader []byte

// ZcbytesHeader is bpf/zcbytes.h, for the same checks of the byte classes.
//
//go:embed zcbytes.h
var ZcbytesHeader []byte
