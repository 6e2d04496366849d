// Package netns builds the "netns" topology: two network namespaces joined by
// a veth pair, one for the sender and one for the receiver.
//
// The namespaces are held by file descriptor only, never bind-mounted under
// /run/netns: the kernel frees a namespace when nothing refers to it any
// more, so they (and the veth pair in them) die with the zcprof process,
// however it ends. Each is made by unshare(2) on a thread of its own; the
// links are set up by iproute2 run from a thread inside the namespace (a
// forked child starts in its parent thread's namespaces), which keeps
// netlink code out of the module. Threads join a namespace with setns(2)
// (Enter).
//
// Names under /run/netns (zcprof-<pid>-...) are what earlier versions made;
// CleanupStale still removes those of dead runs.
package netns

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/caps"
)

// Prefix starts every namespace name: zcprof-<pid>-<seq>-{tx,rx}. The pid
// let CleanupStale tell leftovers of dead runs from live ones when
// namespaces were bind-mounted.
const Prefix = "zcprof-"

// RunDir is where iproute2 bind-mounts named namespaces (earlier zcprof
// versions' leftovers).
const RunDir = "/run/netns"

// The /30 lives only inside our two namespaces, so it cannot clash with
// host routes; every pair reuses it.
var (
	SenderAddr   = [4]byte{10, 199, 0, 1}
	ReceiverAddr = [4]byte{10, 199, 0, 2}
	// And a unique-local IPv6 /64 beside it.
	SenderAddr6   = "fd00:199::1"
	ReceiverAddr6 = "fd00:199::2"
)

const (
	senderIf   = "zc-tx"
	receiverIf = "zc-rx"
)

var seq atomic.Int64

// Threads that enter a namespace are never unlocked, so the runtime ends
// them with their goroutine, except the main thread: a goroutine that
// exits locked on it wedges it for good, still in the namespace, which
// then outlives Close. Locking the main goroutine to it from init keeps
// every other goroutine off it (init runs on the main thread, and a lock
// taken there stays for main).
func init() { runtime.LockOSThread() }

// NS is one network namespace, alive while its descriptor is open (and
// while a thread or socket is in it).
type NS struct {
	Name string // for messages: zcprof-<pid>-<seq>-tx or -rx
	f    *os.File
}

// ID is the namespace's identity as /proc shows it, "net:[inode]".
func (n *NS) ID() string {
	id, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", n.f.Fd()))
	return id
}

// Path names the namespace for other processes while this one holds it
// (nsenter --net=PATH, setns by path).
func (n *NS) Path() string { return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), n.f.Fd()) }

// Pair is one sender/receiver namespace pair.
type Pair struct {
	Sender, Receiver *NS
	MTU              int
	closed           bool
}

// Create makes both namespaces and a veth pair between them with the given
// MTU (0 = veth default 1500), addresses SenderAddr/ReceiverAddr and
// SenderAddr6/ReceiverAddr6, all links up.
// On failure, whatever was created is removed.
func Create(mtu int) (*Pair, error) {
	p := &Pair{MTU: mtu}
	base := fmt.Sprintf("%s%d-%d", Prefix, os.Getpid(), seq.Add(1))
	if err := p.create(base); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Pair) create(base string) error {
	var err error
	if p.Sender, err = newNS(base + "-tx"); err != nil {
		return err
	}
	if p.Receiver, err = newNS(base + "-rx"); err != nil {
		return err
	}
	var mtuArgs []string
	if p.MTU > 0 {
		mtuArgs = []string{"mtu", strconv.Itoa(p.MTU)}
	}
	// Created inside the sender namespace with the peer moved straight
	// into the receiver's (fd 3 of ip: iproute2 opens a netns given as a
	// path): the veth never appears in the host namespace.
	veth := append(append(append([]string{"link", "add", senderIf}, mtuArgs...),
		"type", "veth", "peer", "name", receiverIf, "netns", "/proc/self/fd/3"), mtuArgs...)
	if err := ipIn(p.Sender, []*os.File{p.Receiver.f}, veth...); err != nil {
		return err
	}
	for _, c := range []struct {
		ns   *NS
		args []string
	}{
		{p.Sender, []string{"addr", "add", addr(SenderAddr) + "/30", "dev", senderIf}},
		{p.Receiver, []string{"addr", "add", addr(ReceiverAddr) + "/30", "dev", receiverIf}},
		// nodad: usable at once, not after duplicate address detection.
		{p.Sender, []string{"addr", "add", SenderAddr6 + "/64", "dev", senderIf, "nodad"}},
		{p.Receiver, []string{"addr", "add", ReceiverAddr6 + "/64", "dev", receiverIf, "nodad"}},
		{p.Sender, []string{"link", "set", "lo", "up"}},
		{p.Receiver, []string{"link", "set", "lo", "up"}},
		{p.Sender, []string{"link", "set", senderIf, "up"}},
		{p.Receiver, []string{"link", "set", receiverIf, "up"}},
	} {
		if err := ipIn(c.ns, nil, c.args...); err != nil {
			return err
		}
	}
	return nil
}

// Close drops the pair's hold on both namespaces; the kernel frees them,
// and the veth pair with them, once no thread or socket is left in them.
// Idempotent.
func (p *Pair) Close() error {
	if p == nil || p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	for _, n := range []*NS{p.Sender, p.Receiver} {
		if n != nil {
			errs = append(errs, n.f.Close())
		}
	}
	return errors.Join(errs...)
}

// newNS makes a network namespace on a thread of its own and returns it
// held by descriptor. The thread stays locked, so the runtime discards it
// (and its hold on the namespace) when the goroutine ends.
func newNS(name string) (*NS, error) {
	type result struct {
		f   *os.File
		err error
	}
	c := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			why := ""
			if missing := caps.Missing(unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN); len(missing) > 0 {
				why = fmt.Sprintf(" (the netns topology needs %s, which this process lacks)", caps.Join(missing))
			}
			c <- result{nil, fmt.Errorf("netns %s: unshare: %w%s", name, err, why)}
			return
		}
		f, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			err = fmt.Errorf("netns %s: %w", name, err)
		}
		c <- result{f, err}
	}()
	r := <-c
	if r.err != nil {
		return nil, r.err
	}
	return &NS{Name: name, f: r.f}, nil
}

// ipIn runs ip(8) inside ns: forked from a thread that entered ns, which
// is then discarded. extra become the child's fds 3, 4, ...
func ipIn(ns *NS, extra []*os.File, args ...string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: this thread leaves the host namespace
		if err := Enter(ns); err != nil {
			errc <- err
			return
		}
		errc <- ip(extra, args...)
	}()
	if err := <-errc; err != nil {
		return fmt.Errorf("netns %s: %w", ns.Name, err)
	}
	return nil
}

// Enter switches the calling OS thread into ns. The caller must hold
// runtime.LockOSThread and should never unlock a thread it moved: let the
// goroutine exit locked so the runtime discards the thread.
func Enter(ns *NS) error {
	if err := unix.Setns(int(ns.f.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns %s: %w", ns.Name, err)
	}
	return nil
}

// Exists reports whether a named namespace is present under RunDir.
func Exists(name string) bool {
	_, err := os.Stat(RunDir + "/" + name)
	return err == nil
}

// List returns the names of all namespaces with our prefix.
func List() ([]string, error) {
	ents, err := os.ReadDir(RunDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), Prefix) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// OwnerPID extracts the creating pid from a name made by Create.
func OwnerPID(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return 0, false
	}
	pidStr, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(pidStr)
	return pid, err == nil && pid > 0
}

// Alive reports whether pid exists (kill(pid, 0) does not fail with ESRCH).
func Alive(pid int) bool {
	return unix.Kill(pid, 0) != unix.ESRCH
}

// CleanupStale deletes our namespaces whose owner process is dead and
// returns their names. The caller holds LockStale.
func CleanupStale() ([]string, error) {
	names, err := List()
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, n := range names {
		pid, ok := OwnerPID(n)
		if !ok || Alive(pid) {
			continue
		}
		if err := ip(nil, "netns", "del", n); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, n)
	}
	return removed, errors.Join(errs...)
}

func ip(extra []*os.File, args ...string) error {
	var stderr bytes.Buffer
	cmd := exec.Command("ip", args...)
	cmd.Stderr = &stderr
	cmd.ExtraFiles = extra
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

func addr(a [4]byte) string { return fmt.Sprintf("%d.%d.%d.%d", a[0], a[1], a[2], a[3]) }

// HeldBy lists the network namespaces that process pid holds open by
// descriptor ("net:[inode]"), each once.
func HeldBy(pid int) []string {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	seen := map[string]bool{}
	var out []string
	for _, e := range ents {
		l, err := os.Readlink(dir + "/" + e.Name())
		if err == nil && strings.HasPrefix(l, "net:[") && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	return out
}

// InUse reports whether anything on the machine still refers to namespace
// id ("net:[inode]") in a way /proc shows: a task in it, a descriptor on
// it, or a bind mount of it. (Sockets also keep a namespace alive, but
// only inside a process that InUse sees.)
func InUse(id string) bool {
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil && strings.Contains(string(b), id) {
		return true
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		tasks, _ := os.ReadDir("/proc/" + p.Name() + "/task")
		for _, t := range tasks {
			if l, _ := os.Readlink("/proc/" + p.Name() + "/task/" + t.Name() + "/ns/net"); l == id {
				return true
			}
		}
		pid, _ := strconv.Atoi(p.Name())
		for _, h := range HeldBy(pid) {
			if h == id {
				return true
			}
		}
	}
	return false
}
