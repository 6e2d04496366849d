// Command vmreport is the host side of `make vmtest` (.ci/vmtest): it
// checks one kernel's results and generates the "Tested kernels" docs.
//
//	go run ./.ci/vmreport check RESULTS/<series>
//	go run ./.ci/vmreport docs RESULTS docs/tested-kernels.md README.md
package main

import (
	"fmt"
	"os"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 3 && os.Args[1] == "check":
		err = check(os.Args[2])
	case len(os.Args) == 5 && os.Args[1] == "docs":
		err = docs(os.Args[2], os.Args[3], os.Args[4])
	default:
		err = fmt.Errorf("usage: vmreport check RESULTDIR | vmreport docs RESULTS DOC.md README.md")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vmreport:", err)
		os.Exit(1)
	}
}
