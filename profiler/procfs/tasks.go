package procfs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Threads lists the thread ids of a process.
func Threads(pid int) ([]int, error) {
	entries, err := os.ReadDir(fmt.Sprintf("%s/%d/task", Root, pid))
	if err != nil {
		return nil, err
	}
	return numericNames(entries), nil
}

// Processes lists every process id.
func Processes() ([]int, error) {
	entries, err := os.ReadDir(Root)
	if err != nil {
		return nil, err
	}
	return numericNames(entries), nil
}

func numericNames(entries []os.DirEntry) []int {
	var ids []int
	for _, e := range entries {
		if id, err := strconv.Atoi(e.Name()); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// Comm reads a process's command name.
func Comm(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/comm", Root, pid))
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

// Tgid reads the thread group id of any task id (which may be a thread).
func Tgid(tid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("%s/%d/status", Root, tid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("%s/%d/status: no Tgid line", Root, tid)
}
