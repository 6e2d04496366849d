// Package netns builds the "netns" topology: two network namespaces joined by
// a veth pair, one for the sender and one for the receiver.
//
// It drives iproute2 (`ip netns`, `ip link`, `ip addr`) rather than
// vishvananda/netlink: setup is off the measured path, `ip netns add` already
// does the bind-mount under /run/netns that makes namespaces nameable (and
// therefore findable by CleanupStale), and it keeps two dependencies out of
// the module. Threads join a namespace with setns(2) directly (Enter).
package netns

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Prefix starts every namespace name we create: zcprof-<pid>-<seq>-{tx,rx}.
// The pid lets CleanupStale tell leftovers of dead runs from live ones.
const Prefix = "zcprof-"

// RunDir is where iproute2 bind-mounts named namespaces.
const RunDir = "/run/netns"

// The /30 lives only inside our two namespaces, so it cannot clash with
// host routes; every pair reuses it.
var (
	SenderAddr   = [4]byte{10, 199, 0, 1}
	ReceiverAddr = [4]byte{10, 199, 0, 2}
)

const (
	senderIf   = "zc-tx"
	receiverIf = "zc-rx"
)

var seq atomic.Int64

// Pair is one sender/receiver namespace pair.
type Pair struct {
	Sender, Receiver string // namespace names
	MTU              int
	closed           bool
}

// Create makes both namespaces and a veth pair between them with the given
// MTU (0 = veth default 1500), addresses SenderAddr/ReceiverAddr, all links up.
// On failure, whatever was created is removed.
func Create(mtu int) (*Pair, error) {
	p := &Pair{MTU: mtu}
	base := fmt.Sprintf("%s%d-%d", Prefix, os.Getpid(), seq.Add(1))
	p.Sender, p.Receiver = base+"-tx", base+"-rx"
	if err := p.create(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Pair) create() error {
	mtuArgs := func() []string {
		if p.MTU > 0 {
			return []string{"mtu", strconv.Itoa(p.MTU)}
		}
		return nil
	}
	cmds := [][]string{
		{"netns", "add", p.Sender},
		{"netns", "add", p.Receiver},
		// Created inside the sender namespace with the peer moved straight
		// into the receiver's: the veth never appears in the host namespace.
		append(append(append([]string{"-n", p.Sender, "link", "add", senderIf}, mtuArgs()...),
			"type", "veth", "peer", "name", receiverIf, "netns", p.Receiver), mtuArgs()...),
		{"-n", p.Sender, "addr", "add", addr(SenderAddr) + "/30", "dev", senderIf},
		{"-n", p.Receiver, "addr", "add", addr(ReceiverAddr) + "/30", "dev", receiverIf},
		{"-n", p.Sender, "link", "set", "lo", "up"},
		{"-n", p.Receiver, "link", "set", "lo", "up"},
		{"-n", p.Sender, "link", "set", senderIf, "up"},
		{"-n", p.Receiver, "link", "set", receiverIf, "up"},
	}
	for _, c := range cmds {
		if err := ip(c...); err != nil {
			return err
		}
	}
	return nil
}

// Close deletes both namespaces; the veth pair dies with them. Idempotent.
func (p *Pair) Close() error {
	if p == nil || p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	for _, n := range []string{p.Sender, p.Receiver} {
		if Exists(n) {
			errs = append(errs, ip("netns", "del", n))
		}
	}
	return errors.Join(errs...)
}

// Enter switches the calling OS thread into namespace name. The caller must
// hold runtime.LockOSThread and should never unlock a thread it moved: let
// the goroutine exit locked so the runtime discards the thread.
func Enter(name string) error {
	fd, err := unix.Open(RunDir+"/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open netns %s: %w", name, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns %s: %w", name, err)
	}
	return nil
}

// Exists reports whether a named namespace is present.
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
		if err := ip("netns", "del", n); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, n)
	}
	return removed, errors.Join(errs...)
}

func ip(args ...string) error {
	var stderr bytes.Buffer
	cmd := exec.Command("ip", args...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

func addr(a [4]byte) string { return fmt.Sprintf("%d.%d.%d.%d", a[0], a[1], a[2], a[3]) }
