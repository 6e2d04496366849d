package profiler

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/report"
	"github.com/zcprof/zcprof/profiler/spawn"
)

// ProfileOptions configure `zcprof profile`.
type ProfileOptions struct {
	Target  Target
	Command []string // spawn and follow this command
	// CommandStdout is the command's stdout (nil: zcprof's own).
	CommandStdout *os.File
	Duration      time.Duration // 0: until the command or the pid exits, or ctx ends
	Interval      time.Duration // >0: call OnInterval with a document per interval
	Threads       bool          // per-thread entries
	Backend       string
	// ByteClasses selects how send decisions are observed (Options).
	ByteClasses string

	// Extensions attach after the session opens (attribution backends);
	// they are closed before the session.
	Extensions []ExtensionFunc

	OnInterval func(*report.Document) error
	// OnMapFull is told, at the reading that saw it, the updates each
	// BPF map refused for being full since the last reading, when there
	// is no OnInterval to put it in a document's warnings.
	OnMapFull func(full map[string]uint64)
	// OnStart is called once the programs are attached and the target is
	// registered (tests use it to know when to start their workload).
	OnStart func()
}

// ProfileResult is the whole run.
type ProfileResult struct {
	Document *report.Document
	// ExitCode is the spawned command's exit status (0 without a command).
	ExitCode int
}

// Profile attaches, follows the target until it ends (or Duration, or ctx
// is cancelled: Ctrl-C), and returns the report of the whole run. Every
// program is detached before it returns, on every path.
func Profile(ctx context.Context, opts ProfileOptions) (*ProfileResult, error) {
	if opts.Duration < 0 || opts.Interval < 0 {
		return nil, errors.New("durations must be positive")
	}
	if len(opts.Command) > 0 {
		opts.Target.FollowChildren = true
	}
	sess, err := Open(Options{Target: opts.Target, Backend: opts.Backend, ByteClasses: opts.ByteClasses})
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	var exts []Extension
	defer func() {
		for _, e := range exts {
			e.Close()
		}
	}()
	for _, attach := range opts.Extensions {
		e, err := attach(sess)
		if err != nil {
			return nil, err
		}
		exts = append(exts, e)
	}

	var child *spawn.Child
	if len(opts.Command) > 0 {
		child, err = spawn.Start(opts.Command, opts.CommandStdout)
		if err != nil {
			return nil, err
		}
		if err := sess.AddProcess(child.Pid); err != nil {
			child.Signal(unix.SIGKILL)
			child.Wait()
			return nil, err
		}
	}
	start, err := sess.Snapshot()
	var startExt extReadings
	if err == nil {
		startExt, err = readExtensions(exts)
	}
	if err != nil {
		if child != nil {
			child.Signal(unix.SIGKILL)
			child.Wait()
		}
		return nil, err
	}
	res := &ProfileResult{}
	ended := make(chan string, 1)
	exited := make(chan struct{}) // closed once the command has been waited for
	if child != nil {
		if err := child.Release(); err != nil {
			return nil, fmt.Errorf("start command: %w", err)
		}
		go func() {
			code, err := child.Wait()
			res.ExitCode = code
			close(exited)
			if err != nil {
				ended <- fmt.Sprintf("command: %v", err)
				return
			}
			ended <- ""
		}()
	} else if len(opts.Target.PIDs) > 0 {
		go watchPIDs(ctx, opts.Target.PIDs, ended)
	}
	if opts.OnStart != nil {
		opts.OnStart()
	}

	var deadline <-chan time.Time
	if opts.Duration > 0 {
		t := time.NewTimer(opts.Duration)
		defer t.Stop()
		deadline = t.C
	}
	every := opts.Interval
	if every == 0 {
		every = readingsEvery
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	prev, prevExt := start, startExt
	var note string
	stopChild := false
loop:
	for {
		select {
		case <-ctx.Done():
			note = "interrupted"
			if child != nil {
				child.Signal(unix.SIGINT)
				<-ended
			}
			break loop
		case <-deadline:
			if child != nil {
				note = "duration reached: the command was stopped (SIGTERM), as timeout(1) does"
				stopChild = true
			}
			break loop
		case msg := <-ended:
			note = msg
			break loop
		case <-tick.C:
			snap, err := sess.Snapshot()
			if err != nil {
				return nil, err
			}
			if opts.Interval == 0 || opts.OnInterval == nil {
				if full := mapFull(prev, snap); len(full) > 0 && opts.OnMapFull != nil {
					opts.OnMapFull(full)
				}
				prev = snap
				continue
			}
			snapExt, err := readExtensions(exts)
			if err != nil {
				return nil, err
			}
			iv := Delta(prev, snap)
			d := sess.profileDocument(iv, opts.Threads)
			annotate(exts, d, iv, prevExt, snapExt)
			if err := opts.OnInterval(d); err != nil {
				return nil, err
			}
			prev, prevExt = snap, snapExt
		}
	}
	end, err := sess.Snapshot()
	if err != nil {
		return nil, err
	}
	endExt, err := readExtensions(exts)
	if err != nil {
		return nil, err
	}
	if stopChild {
		// After the last reading: its shutdown is not part of the run.
		child.Stop(exited)
		res.ExitCode = 0 // ended as asked, whatever its signal status
	}
	iv := Delta(start, end)
	res.Document = sess.profileDocument(iv, opts.Threads)
	annotate(exts, res.Document, iv, startExt, endExt)
	if note != "" && note != "interrupted" {
		res.Document.Warnings = append(res.Document.Warnings, note)
	}
	for _, e := range exts {
		if err := e.Close(); err != nil {
			return nil, err
		}
	}
	return res, sess.Close()
}

// readingsEvery is how often a profile without an interval reads the maps
// all the same: an exited thread's entries are released only at a reading
// after its exit was seen (retire.go), so without readings a long run
// under churn fills the maps, and a full map would be told only at the end.
var readingsEvery = 5 * time.Second

func (s *Session) profileDocument(iv Interval, threads bool) *report.Document {
	procs := Processes(iv, threads)
	var scope []report.CPU
	for _, p := range procs {
		scope = append(scope, p.CPU)
	}
	d := s.NewDocument("profile", iv, scope...)
	for i := range procs {
		byteclass.MarkUnavailable(&procs[i], d.Backends.ByteClassesUnavailable)
	}
	d.Processes = procs
	return d
}

// watchPIDs reports when every watched process has exited.
func watchPIDs(ctx context.Context, pids []int, ended chan<- string) {
	var fds []int
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err == nil {
			fds = append(fds, fd)
		}
	}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	alive := len(fds)
	polls := make([]unix.PollFd, len(fds))
	for i, fd := range fds {
		polls[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	}
	for alive > 0 && ctx.Err() == nil {
		n, err := unix.Poll(polls, 200)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		if n <= 0 {
			continue
		}
		for i := range polls {
			if polls[i].Revents&unix.POLLIN != 0 {
				polls[i].Fd = -1 // exited: stop polling it
				alive--
			}
		}
	}
	if ctx.Err() == nil {
		ended <- fmt.Sprintf("target process(es) %v exited; profiled until then", pids)
	}
}
