package pseudofs

import (
	"os"
	"strings"
)

// mountID is the id of the topmost mount at dir when it has type fstype
// (/proc/self/mountinfo lists mounts in the order they were made, so the
// last entry for a mount point is the one visible there).
func mountID(dir, fstype string) (string, bool) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", false
	}
	id, typ := "", ""
	for _, line := range strings.Split(string(b), "\n") {
		// 36 35 98:0 / /mnt rw,noatime master:1 - ext3 /dev/root rw
		f := strings.Fields(line)
		if len(f) < 5 || f[4] != dir {
			continue
		}
		id, typ = f[0], ""
		for i, x := range f {
			if x == "-" && i+1 < len(f) {
				typ = f[i+1]
				break
			}
		}
	}
	return id, id != "" && typ == fstype
}
