package profiler

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/cilium/ebpf"

	"github.com/zcprof/zcprof/bpf"
	"github.com/zcprof/zcprof/profiler/byteclass"
	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/procfs"
	"github.com/zcprof/zcprof/profiler/pseudofs"
	"github.com/zcprof/zcprof/profiler/taxonomy"
)

// Options configure a profiling session.
type Options struct {
	Target  Target
	Backend string // "auto" (default), "tp_btf" or "raw_tp"
	// ByteClasses: how send decisions are observed: "auto" (default),
	// byteclass.Decision, Syscall, SyscallReturn or Off.
	ByteClasses string
	// OwnerSplit sizes the softirq owner split's counters, which live in
	// the accounting object (its softirq_exit handler closes the split's
	// segments), so that profiler/softirqowner can attach to the session.
	// Without it they hold one entry each.
	OwnerSplit bool
	// NoPinnedSends: the targets make no MSG_ZEROCOPY or io_uring SEND_ZC
	// sends, so the byte classes leave out the programs that count later
	// copies of pinned pages, on hooks every skb passes
	// (byteclass.Options).
	NoPinnedSends bool
	// NoUringSends: the targets make no io_uring sends, so the
	// accounting's sock_send_length program (their bytes, counted per
	// sock_sendmsg) is left out, one program run less per send, and the
	// byte classes infer each send's class from its syscall rather than
	// from tcp_sendmsg_locked (byteclass.Options).
	NoUringSends bool
	// TxWritesCopy: the targets send only by plain writes, so the byte
	// classes count tx.write's bytes as copies rather than hook each send
	// (byteclass.Options).
	TxWritesCopy bool
}

// Session owns the loaded accounting programs and their maps. Close releases
// every link, map and file descriptor; it is safe to call more than once.
type Session struct {
	backend     string
	fallback    string            // why the preferred backend was not used
	unavailable map[string]string // feature -> reason

	progs     *loaded
	core      *ebpf.Collection
	cgroupDir *os.File
	bytes     *byteclass.Loaded // nil when not loaded
	// classes: the byte-class counters, read loaded or not (the
	// accounting counts a MSG_TRUNC receive's bytes itself).
	classes *byteclass.Counters
	// ownerSplit: the owner split's maps are sized for it (Options).
	ownerSplit bool
	tracefs    *pseudofs.Hold
	// dispatchNS is the calibrated per-run cost the handlers cannot time
	// (calibrate.go), counted as probe time with every timed run.
	dispatchNS uint64

	mu      sync.Mutex
	progIDs map[*ebpf.Program]uint32 // kernel ids, asked once per program
	nextGen uint32
	retired retirement // exited threads, released from the maps
	closed  bool
}

// Open loads and attaches the accounting programs.
func Open(opts Options) (*Session, error) {
	if err := kernel.Privileged(); err != nil {
		return nil, err
	}
	cfg, err := opts.Target.filterConfig()
	if err != nil {
		return nil, err
	}
	spec, err := accountingSpec(cfg, opts.ByteClasses, opts.OwnerSplit)
	if err != nil {
		return nil, err
	}
	s := &Session{unavailable: map[string]string{}, nextGen: 1, ownerSplit: opts.OwnerSplit}
	// The kernel's BPF run-time statistics stay off: they add two clock
	// reads to every run of every BPF program on the host. The handlers
	// time themselves (taxonomy.CtxProbe); what they cannot time is calibrated
	// before anything of ours is attached (calibrate.go).
	if _, err := HookDispatchNS(); err != nil {
		s.unavailable["hook dispatch calibration"] = fmt.Sprintf("probe time leaves out the feature programs' dispatch: %v", err)
	}
	if err := SetHookDispatch(spec); err != nil {
		return nil, err
	}

	backends := kernel.AccountingLadder
	switch opts.Backend {
	case "", kernel.Auto:
	default:
		if err := kernel.Choose("--accounting", " backend", opts.Backend, kernel.AccountingChoices()); err != nil {
			s.Close()
			return nil, err
		}
		backends = []string{opts.Backend}
	}
	var errs []error
	var dispatchErr error
	for _, b := range backends {
		s.dispatchNS, dispatchErr = DispatchNS(b)
		progs, core, err := loadBackend(spec, b, !opts.NoUringSends, s.unavailable)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.backend, s.progs, s.core = b, progs, core
		break
	}
	if s.progs == nil {
		s.Close()
		return nil, fmt.Errorf("cannot attach accounting programs: %w", errors.Join(errs...))
	}
	if len(errs) > 0 {
		s.fallback = errs[0].Error()
		s.unavailable[kernel.TpBTF] = s.fallback
	}
	if dispatchErr != nil {
		s.unavailable["dispatch calibration"] = fmt.Sprintf("probe time leaves out each event's dispatch: %v", dispatchErr)
	}
	if err := s.core.Variables["dispatch_ns"].Set(s.dispatchNS); err != nil {
		s.Close()
		return nil, fmt.Errorf("set dispatch_ns: %w", err)
	}
	// Byte classes and zero-copy outcomes: optional, failures recorded.
	// Their classic tracepoints need tracefs, before cilium/ebpf first
	// looks for it (it remembers the answer for the process's life).
	if opts.ByteClasses != byteclass.Off {
		if s.tracefs, err = pseudofs.Acquire(pseudofs.Tracefs); err != nil {
			s.unavailable["tracefs"] = err.Error()
		}
	}
	if s.classes, err = byteclass.NewCounters(s.core.Maps); err != nil {
		s.Close()
		return nil, err
	}
	s.bytes, err = byteclass.Open(s.core.Maps, byteclass.Options{Want: opts.ByteClasses, NoPinnedSends: opts.NoPinnedSends, NoUringSends: opts.NoUringSends, TxWritesCopy: opts.TxWritesCopy}, s.unavailable, SetHookDispatch)
	if err != nil {
		s.Close()
		return nil, err
	}
	if s.bytes != nil {
		s.TrackPrograms(s.bytes.Programs()...)
	}

	if opts.Target.Cgroup != "" {
		f, err := openCgroup(opts.Target.Cgroup)
		if err == nil {
			err = s.core.Maps["cgroup_filter"].Update(uint32(0), uint32(f.Fd()), ebpf.UpdateAny)
		}
		if err != nil {
			s.Close()
			return nil, err
		}
		s.cgroupDir = f
	}
	for _, pid := range opts.Target.PIDs {
		if err := s.AddProcess(pid); err != nil {
			s.Close()
			return nil, err
		}
	}
	for _, tid := range opts.Target.TIDs {
		if err := s.AddThread(tid); err != nil {
			s.Close()
			return nil, err
		}
	}
	if opts.Target.Comm != "" || opts.Target.All {
		if err := s.registerExisting(opts.Target); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Backend is the accounting backend in use ("tp_btf" or "raw_tp").
func (s *Session) Backend() string { return s.backend }

// ByteClasses says how send decisions are observed (byteclass.Decision,
// Syscall or SyscallReturn), "" when the byte-class programs are not
// loaded.
func (s *Session) ByteClasses() string {
	if s.bytes == nil {
		return ""
	}
	return s.bytes.Mode()
}

// ByteClassSourcesUnavailable lists the byte-class sources this session
// could not attach (their bytes are not counted; the reasons are in
// Unavailable under "byte classes: <source>"), sorted. Empty when byte
// classes are off or not loaded at all: the verdicts then come from the
// syscall request (report.ZerocopySourceRequest).
func (s *Session) ByteClassSourcesUnavailable() []string {
	if s.bytes == nil {
		return nil
	}
	return byteclass.SourcesUnavailable(s.unavailable)
}

// Fallback says why the preferred backend was not used ("" if it was).
func (s *Session) Fallback() string { return s.fallback }

// Maps returns the accounting maps by name, including the .data/.rodata/
// .bss variables, for feature programs that share them (pass as
// ebpf.CollectionOptions.MapReplacements).
func (s *Session) Maps() map[string]*ebpf.Map { return s.core.Maps }

// TrackPrograms adds a feature's programs to the overhead figures and to
// the program ids the session reports. The feature still closes them.
func (s *Session) TrackPrograms(progs ...*ebpf.Program) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.progs.progs = append(s.progs.progs, progs...)
}

// ProgramIDs lists the kernel ids of the attached programs.
func (s *Session) ProgramIDs() []uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.programIDs()
}

func (s *Session) programIDs() []uint32 {
	if s.progIDs == nil {
		s.progIDs = map[*ebpf.Program]uint32{}
	}
	var ids []uint32
	for _, p := range s.progs.progs {
		id, ok := s.progIDs[p]
		if !ok {
			if info, err := p.Info(); err == nil {
				if kid, has := info.ID(); has {
					id, ok = uint32(kid), true
					s.progIDs[p] = id
				}
			}
		}
		if ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// Mounted lists the pseudo-filesystems zcprof mounted for this session,
// one line each (report.Backends.Mounted).
func (s *Session) Mounted() []string {
	if note := s.tracefs.Note(); note != "" {
		return []string{note}
	}
	return nil
}

// Unavailable lists features this kernel denied, with the reason.
func (s *Session) Unavailable() map[string]string { return s.unavailable }

// AddProcess makes a process and all its threads targets, registering the
// threads that exist now so the first snapshot already knows them.
func (s *Session) AddProcess(pid int) error {
	tids, err := procfs.Threads(pid)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("process %d does not exist", pid)
		}
		return fmt.Errorf("process %d: %w", pid, err)
	}
	if err := s.core.Maps["targets_tgid"].Update(uint32(pid), uint8(1), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("add target %d: %w", pid, err)
	}
	for _, tid := range tids {
		if err := s.register(tid, pid); err != nil {
			return err
		}
	}
	return s.bumpEpoch()
}

// AddThread makes one thread of this process a target.
func (s *Session) AddThread(tid int) error {
	if err := s.core.Maps["targets_tid"].Update(uint32(tid), uint8(1), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("add target thread %d: %w", tid, err)
	}
	if err := s.register(tid, os.Getpid()); err != nil {
		return err
	}
	return s.bumpEpoch()
}

// registerExisting pre-registers the tasks that match a comm or -a filter.
func (s *Session) registerExisting(t Target) error {
	pids, err := procfs.Processes()
	if err != nil {
		return err
	}
	for _, pid := range pids {
		if pid == os.Getpid() {
			continue
		}
		if !t.All {
			comm, err := procfs.Comm(pid)
			if err != nil || comm != t.Comm {
				continue
			}
		}
		tids, err := procfs.Threads(pid)
		if err != nil {
			continue // exited meanwhile
		}
		for _, tid := range tids {
			if err := s.register(tid, pid); err != nil {
				return err
			}
		}
	}
	return s.bumpEpoch()
}

// register creates the BPF thread entry of an existing thread with a
// generation from the low range (BPF hands out generations from 1<<24).
//
// A thread that exits between the /proc listing and the insert is never
// switched out dead with an entry, so the kernel would not remove it, and
// a later task reusing the tid would inherit it (its time billed to a
// thread long gone): the thread is read before and after the insert, and
// an entry whose thread is gone, or is another task by then, is taken back.
func (s *Session) register(tid, tgid int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	before, err := procfs.ReadTaskStat(tgid, tid)
	if err != nil || exited(before) {
		return nil
	}
	gen := s.nextGen
	th := bpf.AccountingZcThread{Gen: gen, Tgid: uint32(tgid), Path: uint8(taxonomy.PathUnknown)}
	err = s.core.Maps["threads"].Update(uint32(tid), th, ebpf.UpdateNoExist)
	if errors.Is(err, ebpf.ErrKeyExist) {
		return nil // BPF saw it first, or it was registered before
	}
	if err != nil {
		return fmt.Errorf("register thread %d: %w", tid, err)
	}
	s.nextGen++
	st, err := procfs.ReadTaskStat(tgid, tid)
	if err != nil || exited(st) || st.StartTicks != before.StartTicks {
		// Deleted only if still ours: the kernel may have replaced it.
		var cur bpf.AccountingZcThread
		if s.core.Maps["threads"].Lookup(uint32(tid), &cur) == nil && cur.Gen == gen {
			s.core.Maps["threads"].Delete(uint32(tid))
		}
		return nil
	}
	info := bpf.AccountingZcThreadInfo{Tid: uint32(tid), Tgid: uint32(tgid)}
	for i := 0; i < len(info.Comm)-1 && i < len(st.Comm); i++ {
		info.Comm[i] = int8(st.Comm[i])
	}
	if err := s.core.Maps["thread_infos"].Update(gen, info, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("register thread %d: %w", tid, err)
	}
	return nil
}

// exited: a zombie (a leader whose threads live on, or one not yet
// reaped) has had its last switch.
func exited(st procfs.TaskStat) bool { return st.State == 'Z' || st.State == 'X' }

func (s *Session) bumpEpoch() error {
	v := s.core.Variables["targets_epoch"]
	var epoch uint32
	if err := v.Get(&epoch); err != nil {
		return fmt.Errorf("read targets_epoch: %w", err)
	}
	return v.Set(epoch + 1)
}

// Close detaches and frees everything. Programs are gone from the kernel
// once it returns.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	var ids []uint32
	if s.progs != nil {
		ids = s.programIDs()
		errs = append(errs, s.progs.Close())
	}
	if s.cgroupDir != nil {
		errs = append(errs, s.cgroupDir.Close())
	}
	if s.bytes != nil {
		errs = append(errs, s.bytes.Close())
	}
	bpf.WaitGone(ids)
	// After the links are closed: the tracepoints no longer hold tracefs.
	errs = append(errs, s.tracefs.Release())
	return errors.Join(errs...)
}
