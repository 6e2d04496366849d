// Package byteclass is what the kernel did with the bytes of each path:
// copied, spliced (page references), pinned (MSG_ZEROCOPY, io_uring
// SEND_ZC), copied later on local delivery or for a packet tap, received
// by copy or by mapping. It loads and attaches the zcbytes object
// (bpf/zcbytes.bpf.c) beside the accounting, reads its counters, and turns
// a group of threads' classes into the zerocopy object of the report, with
// the figures behind its verdict. The accounting session (package
// profiler) opens it, keeps its counters per thread in each Snapshot and
// Interval, and calls Zerocopy and Annotate for each process and path.
//
//   - byteclass.go: the classes (Class, mirroring enum zcb_class in
//     bpf/zcbytes.h) and the counter keys (Key per thread generation,
//     PathClass within a thread) and values (Count).
//   - load.go: the zcbytes object and where its programs attach, the zcb*
//     point tables: zcbDecision (tp_btf tcp_sendmsg_locked, 6.16+: the
//     kernel's own zero-copy decision), zcbSend (sock_send_length),
//     zcbSendSyscalls (the send syscalls' entry and exit, before 6.3),
//     zcbUring/zcbUringSQE, zcbRetransmitErr/zcbRetransmit, and zcbOthers
//     (netif_receive_skb, net_dev_start_xmit, completions).
//     What only a syscall shows (a sendfile or splice source that cannot
//     splice, TCP_ZEROCOPY_RECEIVE's mapped and copied bytes, receive
//     copies: a receive's bytes unless it passed MSG_TRUNC) the accounting's own
//     syscall handlers note (SetupAccounting turns that on, and the
//     accounting object owns the counters, zcb_stats). Open walks the backends (Decision, then Syscall, then
//     SyscallReturn; Choices are what --byte-classes takes) and records
//     each source it could not attach under "byte classes: <source>"
//     (SourcesUnavailable). Read sums the per-CPU counters.
//   - verdict.go: one entry's classes summed (byteTotals) into the
//     report.Zerocopy figures: copied, spliced, pinned, deferred and
//     re-copied bytes, where the deferred copies happened, the receive
//     side; and the Reason, the sentence listing those figures. Whether
//     sendfile's bytes were spliced or copied is decided in the kernel
//     (bpf/zcbytes.bpf.c: tcp_sendmsg_locked, or the syscall path plus the
//     skb flags; a source that cannot splice: note_source in
//     bpf/accounting.bpf.c) and counted as ClassTxSplice or a copy class; the
//     verdict sentence itself ("sendfile: zero-copy taken for ...") is
//     worded by report.Judge (txVerdict, profiler/report/verdict.go), which
//     this package calls.
//   - zerocopy.go: the zerocopy object of a group of threads (Zerocopy: a
//     process, one side of a run cell) and of each socket path (Annotate);
//     the syscall-request fallback when the programs were not loaded; and
//     MarkUnavailable, which marks verdicts that depend on a source that
//     could not attach.
package byteclass
