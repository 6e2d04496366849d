// Package kernel is zcprof's one home for what the running kernel is and
// allows: host facts, feature probes and the capability ladder, used by the
// core (the session, the attribution backends, the workload) and by
// `zcprof doctor` alike. doctor only turns its results into a report; no
// core package imports doctor.
//
// Code map:
//
//   - backends.go: the backend and attach-kind names (one spelling for
//     CLI, library and doctor), the ladders in `auto`'s order
//     (AccountingLadder, AttributionLadder), the allowed values of
//     --accounting and --backend, and Choose, the one check of them.
//   - decide.go: Decide, the ladder applied to the attach kinds that work,
//     with what zcprof does instead of each missing rung.
//   - host.go (release, online CPUs, ReadHost), kconfig.go (the kernel
//     config), settings.go (lockdown, sysctls), privileged.go (root or
//     CAP_BPF+CAP_PERFMON).
//   - Probes as data, one per file, after cilium/ebpf's features/: each
//     AttachProbe names a trivial program of bpf/probes.bpf.c, where it
//     attaches and what makes it fire: tpbtf.go and rawtp.go (sched_switch),
//     fentry.go and kprobe.go (tcp_sendmsg), kprobemulti.go (tcp_sendmsg*);
//     perfevent.go (cpu-clock on every CPU, with kernel stacks);
//     tracepoint.go and function.go (any tracepoint or function). probes.go
//     loads them one at a time on one hits map; attach.go runs one
//     (Probes.Try); trigger.go makes them fire.
//   - explain.go: a refusal in one line with its cause (Env.Describe),
//     e.g. fentry's EPERM explained as the locked function tracer.
//   - select.go: the cheap check `auto` asks before attaching an
//     attribution backend for real (SelectAttribution; the accounting's
//     session simply tries its ladder), and Describe with this host's Env.
package kernel
