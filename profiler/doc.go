// Package profiler is zcprof's accounting session and the facade the CLI
// and the workload use: Open a Session on some targets, take Snapshots,
// subtract two into an Interval, and build a report.Document from it.
// docs/architecture.md tells the whole story; this is the map of the
// package and of where its figures come from.
//
// # The accounting session
//
//   - session.go: Open (loads, attaches, registers targets; picks tp_btf,
//     else raw_tp, from kernel.AccountingLadder; opens the byte classes,
//     profiler/byteclass, on the accounting's maps), AddProcess/AddThread,
//     Close. target.go: which tasks are targets (pid, tid, comm, cgroup,
//     all), filtered in the kernel.
//   - load.go: the accounting object (bpf/accounting.bpf.c) and where its
//     programs attach: corePoints (sys_enter, sys_exit, sched_switch,
//     softirq and irq entry/exit, fork/exec/exit) and optionalPoints
//     (sock_send_length), all through kernel.AttachProgram: the sched_switch program
//     is SEC("tp_btf/sched_switch") or SEC("raw_tp/sched_switch") in
//     bpf/accounting.bpf.c, attached by loadBackend. Which path a syscall
//     belongs to (tx.sendfile, rx.zerocopy, ...) is decided in the kernel,
//     by classify() in bpf/accounting.bpf.c; profiler/taxonomy mirrors its
//     paths and contexts.
//   - calibrate.go: the per-run dispatch cost the handlers cannot time
//     (DispatchNS, HookDispatchNS; SetHookDispatch for every object with
//     timed programs).
//   - snapshot.go: one reading of the per-CPU counter maps, thread infos,
//     schedstat and /proc/PID/stat per thread (profiler/procfs, which also
//     gives the host's steal time for the self-check's bound), and the
//     byte classes.
//     entries.go: a live thread's task-context counters, which are not in
//     the stats map but in its threads entry and, while it runs, on its
//     CPU (zc_cpu.pend), each counted once. retire.go: exited threads released from the maps and summed per
//     process. interval.go: Delta of two snapshots, per thread generation
//     (byte classes too, deltaByteClasses).
//   - aggregate.go: threads summed into processes, paths and the system
//     row. The per-path CPU, CPU/call and CPU/MiB figures are computed in
//     Totals.Entry (report.Path's NSPerCall and NSPerMiB, ns_per_mib in the
//     JSON); the CPU/MiB column is rendered by writePaths in
//     profiler/report/table.go. ProcessEntry adds each process's and
//     path's zerocopy object (byteclass.Zerocopy, byteclass.Annotate).
//   - precision.go: the self-check against sum_exec_runtime.
//   - document.go: the header every result shares (host, backends,
//     overhead, system row, precision). profile.go: `zcprof profile`'s
//     loop (Profile), one document per interval.
//   - extension.go: features attached beside the accounting that add their
//     figures to each document (the attribution backends: profiler/attrib,
//     profiler/exact, wired by profiler/backends).
//
// # Elsewhere
//
// Paths and contexts: profiler/taxonomy. Byte classes, their loader and
// attach points, and the zerocopy object with its figures:
// profiler/byteclass (whether sendfile's bytes were spliced or copied is
// decided in bpf/zcbytes.bpf.c; the verdict sentence is worded by
// report.Judge, txVerdict in profiler/report/verdict.go). Host facts,
// feature probes and the capability ladder: profiler/kernel. Rendering
// (number formats in profiler/report/format.go): profiler/report. Softirq
// owner split: profiler/softirqowner. /proc readers: profiler/procfs.
// Kernel symbols: profiler/ksym.
package profiler
