// Package taxonomy names what a target's time and bytes are split by: the
// paths (tx.write, tx.sendfile, rx.zerocopy, ...) and the execution
// contexts (task, softirq.net_rx, hardirq, ...). The names are part of the
// zcprof/v1 output contract; the values mirror enum zc_path and enum zc_ctx
// in bpf/accounting.h.
//
// Which path a syscall belongs to is not decided here but in the kernel, by
// classify() in bpf/accounting.bpf.c (sendfile to a socket is
// PATH_TX_SENDFILE, which is PathTxSendfile here). The accounting
// (package profiler) keys its counters by path and context; the byte
// classes (profiler/byteclass) by path and class.
//
//   - taxonomy.go: Path and Ctx, their contract names (String, PathByName),
//     the report order of the kernel paths (SyscallPaths), and which
//     contexts are on-CPU time of the workload (Ctx.OnCPU).
//   - mirror_test.go: the values match bpf/accounting.h.
package taxonomy
