package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// RequireTool returns the path of the first of names found in PATH. A test
// without it skips, except under `make test`/`make bench` (which install
// it, `make deps-test`) and CI, where a skip would hide a missing check.
func RequireTool(t testing.TB, names ...string) string {
	t.Helper()
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := strings.Join(names, " or ") + " is not installed (make deps-test installs it)"
	if os.Getenv("ZCPROF_REQUIRE_BPF") == "1" || os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
