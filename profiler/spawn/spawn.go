// Package spawn starts a command so that it can be registered with the
// profiler before it executes a single instruction of its own: zcprof
// re-executes itself as a small helper that blocks on a pipe, the profiler
// registers the helper's pid, and only then does the helper exec the
// command (keeping the pid, so nothing is missed).
package spawn

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// helperArg is argv[1] of the re-executed helper.
const helperArg = "__zcprof_exec_helper"

// Child is a command waiting for Release.
type Child struct {
	cmd     *exec.Cmd
	release *os.File
	Pid     int
}

// Start resolves argv[0] on PATH and starts the helper, stopped before
// exec, with stdout as its stdout (nil: zcprof's).
func Start(argv []string, stdout *os.File) (*Child, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command given after --")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("command %q: %w", argv[0], err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, append([]string{helperArg, path}, argv...)...)
	if stdout == nil {
		stdout = os.Stdout
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{r} // fd 3 in the helper
	// The command dies with zcprof, as with timeout(1): a zcprof that is
	// SIGKILLed cannot stop it, and an orphan would go on unmeasured. The
	// setting survives exec, except into a set-user-ID or file-capability
	// binary. (It fires when the forking thread exits; Go keeps its threads
	// until the process ends, unless a goroutine exits while locked to one,
	// which the profiler's goroutines never do.)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	r.Close()
	return &Child{cmd: cmd, release: w, Pid: cmd.Process.Pid}, nil
}

// Release lets the helper exec the command.
func (c *Child) Release() error {
	_, err := c.release.Write([]byte{1})
	c.release.Close()
	return err
}

// Wait waits for the command and returns its exit status (128+signal when
// killed by a signal, as shells report it).
func (c *Child) Wait() (int, error) {
	if c.release != nil {
		c.release.Close() // if never released, the helper exits
	}
	err := c.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

// Signal forwards a signal to the command.
func (c *Child) Signal(sig os.Signal) error { return c.cmd.Process.Signal(sig) }

// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// Stop ends the command as timeout(1) does: SIGTERM, then SIGKILL after a
// grace period. exited must be closed (or receive) once Wait has returned.
func (c *Child) Stop(exited <-chan struct{}) {
	c.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(stopGrace):
		c.Signal(syscall.SIGKILL)
		<-exited
	}
}

// The helper must exec from the process's first thread. Its main goroutine
// blocks on the release pipe and may wake on another thread; exec from a
// non-leader thread makes the kernel kill the leader and hand its pid to
// the execing thread (de_thread), and the command's main thread then shows
// up twice in the report: the helper's leader, and itself under the same
// tid. Locking in init keeps main on the first thread (runtime.main runs
// init there and leaves a lock taken in init in place).
func init() {
	if len(os.Args) > 1 && os.Args[1] == helperArg {
		runtime.LockOSThread()
	}
}

// RunHelperIfRequested must be the first thing main does: in the helper it
// waits for the release byte and execs the command; it returns otherwise.
func RunHelperIfRequested() {
	if len(os.Args) < 4 || os.Args[1] != helperArg {
		return
	}
	release := os.NewFile(3, "release")
	var b [1]byte
	if n, _ := release.Read(b[:]); n != 1 {
		os.Exit(125) // the profiler gave up before releasing us
	}
	release.Close()
	err := syscall.Exec(os.Args[2], os.Args[3:], os.Environ())
	fmt.Fprintf(os.Stderr, "zcprof: exec %s: %v\n", os.Args[3], err)
	os.Exit(127)
}
