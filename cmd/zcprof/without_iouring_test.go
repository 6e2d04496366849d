package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/workload"
	zrun "github.com/zcprof/zcprof/workload/run"
)

// withoutIOUringEnv names the program the test binary execs, started with
// it, as it would run on a kernel built without io_uring: a seccomp filter
// makes io_uring_setup fail with ENOSYS, as it does where CONFIG_IO_URING
// is off. None of our kernels lacks io_uring, and its sysctl
// (io_uring_disabled) is the whole machine's.
const withoutIOUringEnv = "ZCPROF_TEST_EXEC_WITHOUT_IO_URING"

// execWithoutIOUring, when the test binary was started to be that
// wrapper, installs the filter and execs the program: it does not return.
func execWithoutIOUring() {
	exe := os.Getenv(withoutIOUringEnv)
	if exe == "" {
		return
	}
	// The filter is the calling thread's, and execve keeps it for the
	// whole new program.
	runtime.LockOSThread()
	filter := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4}, // seccomp_data.arch
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.AUDIT_ARCH_X86_64, Jt: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 0}, // seccomp_data.nr
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_IO_URING_SETUP, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail("PR_SET_NO_NEW_PRIVS", err)
	}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		fail("PR_SET_SECCOMP", err)
	}
	env := slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, withoutIOUringEnv+"=") })
	fail("exec "+exe, syscall.Exec(exe, append([]string{exe}, os.Args[1:]...), env))
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
	os.Exit(2)
}

// withoutIOUringExec is the program, and the environment entry, that run
// zcprof as on a kernel without io_uring: this test binary (go test runs
// it by its absolute path), which execs zcprof under the filter.
func withoutIOUringExec() (exe, env string) {
	return os.Args[0], withoutIOUringEnv + "=" + zcprofBin
}

// withoutIOUring is `zcprof args` as on a kernel without io_uring.
func withoutIOUring(args ...string) *exec.Cmd {
	exe, env := withoutIOUringExec()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env)
	return cmd
}

// TestRunWithoutIOUring: on a kernel without io_uring the default matrix
// runs every other method and says, in one line, what it left out and
// why; a method the user names that the kernel lacks is refused in one
// line.
func TestRunWithoutIOUring(t *testing.T) {
	requireBPF(t)
	r := run(t, withoutIOUring("run", "--bytes", "1M", "--backend", "none", "--byte-classes", "off", "--json", "-q"))
	const want = "zcprof: the default matrix leaves out io_uring_zc: io_uring is not built into this kernel (io_uring_setup: ENOSYS)"
	if r.code != 0 || strings.TrimSpace(r.stderr) != want {
		t.Fatalf("default matrix: exit %d, stderr %q; want exit 0 and the one line %q", r.code, r.stderr, want)
	}
	var methods []string
	for _, c := range decode(t, r.stdout).Cells {
		methods = append(methods, c.Method)
		if c.Workload.SentBytes != 1<<20 || c.Workload.ReceivedBytes != 1<<20 {
			t.Errorf("%s: sent %d, received %d; want %d", c.Method, c.Workload.SentBytes, c.Workload.ReceivedBytes, 1<<20)
		}
	}
	if wantMethods := slices.DeleteFunc(slices.Clone(zrun.DefaultMethods), func(m string) bool { return m == workload.MethodIOUringZC }); !slices.Equal(methods, wantMethods) {
		t.Errorf("cells %v, want %v", methods, wantMethods)
	}
	r = run(t, withoutIOUring("run", "--method", "io_uring", "--bytes", "1M", "-q"))
	oneLine(t, []string{"run", "--method", "io_uring"}, r, `method "io_uring": io_uring is not built into this kernel (io_uring_setup: ENOSYS)`)
}
