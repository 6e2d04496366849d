package exact

import "github.com/zcprof/zcprof/profiler/attrib"

// Function is one traced kernel function. ID mirrors enum zc_fx_func in
// bpf/funcexact.h; Short names its programs (fe_, fx_, kp_, kr_ + Short).
type Function struct {
	Name  string
	ID    uint8
	Short string
	// Category receives the function's self time (its inclusive time minus
	// that of the traced functions it called).
	Category string
	// Bytes says where its byte count comes from.
	Bytes string
	// MinArgs is how many arguments the fexit program reads by position
	// (bpf_get_func_arg): the kernel's BTF prototype must have at least as
	// many.
	MinArgs int
	// Copy marks the iov_iter copy routines, which distro kernels refuse
	// (fentry EBUSY, kprobe not found).
	Copy bool
}

// Function ids (enum zc_fx_func).
const (
	FuncTCPSendmsgLocked uint8 = iota
	FuncTCPRecvmsgLocked
	FuncSkbCopyDatagramIter
	FuncSimpleCopyToIter
	FuncCopyFromIter
	FuncCopyToIter
	FuncSpliceToSocket
	FuncFilemapSpliceRead
	FuncSkbSpliceFromIter
	FuncDoSpliceDirect
	FuncSkbZerocopyIterStream
	FuncMsgZerocopyRealloc
	FuncSkbCopyUbufs
	FuncTCPZerocopyReceive
	FuncIOSendZc
	FuncIOSendmsgZc
	numFuncs
)

// Functions are all the functions the backend knows, by id.
var Functions = []Function{
	{Name: "tcp_sendmsg_locked", ID: FuncTCPSendmsgLocked, Short: "tsl", Category: attrib.TCPTx,
		Bytes: "return value (bytes queued)"},
	{Name: "tcp_recvmsg_locked", ID: FuncTCPRecvmsgLocked, Short: "trl", Category: attrib.TCPRx,
		Bytes: "return value (bytes received)"},
	{Name: "skb_copy_datagram_iter", ID: FuncSkbCopyDatagramIter, Short: "scdi", Category: attrib.CopyRx,
		Bytes: "len argument when it returns 0", MinArgs: 4},
	{Name: "simple_copy_to_iter", ID: FuncSimpleCopyToIter, Short: "scti", Category: attrib.CopyRx,
		Bytes: "return value (bytes copied)"},
	{Name: "_copy_from_iter", ID: FuncCopyFromIter, Short: "cfi", Category: attrib.CopyTx,
		Bytes: "return value (bytes copied)", Copy: true},
	{Name: "_copy_to_iter", ID: FuncCopyToIter, Short: "cti", Category: attrib.CopyRx,
		Bytes: "return value (bytes copied)", Copy: true},
	{Name: "splice_to_socket", ID: FuncSpliceToSocket, Short: "sts", Category: attrib.Splice,
		Bytes: "return value (bytes spliced)"},
	{Name: "filemap_splice_read", ID: FuncFilemapSpliceRead, Short: "fsr", Category: attrib.Pagecache,
		Bytes: "return value (bytes read into the pipe)"},
	{Name: "skb_splice_from_iter", ID: FuncSkbSpliceFromIter, Short: "ssfi", Category: attrib.Splice,
		Bytes: "return value (bytes of page references added)"},
	{Name: "do_splice_direct", ID: FuncDoSpliceDirect, Short: "dsd", Category: attrib.Splice,
		Bytes: "return value (bytes sent)"},
	{Name: "skb_zerocopy_iter_stream", ID: FuncSkbZerocopyIterStream, Short: "szis", Category: attrib.ZcPin,
		Bytes: "return value (bytes pinned)"},
	{Name: "msg_zerocopy_realloc", ID: FuncMsgZerocopyRealloc, Short: "mzr", Category: attrib.ZcPin,
		Bytes: "size argument when it returns a uarg", MinArgs: 2},
	{Name: "skb_copy_ubufs", ID: FuncSkbCopyUbufs, Short: "scu", Category: attrib.CopyDeferred,
		Bytes: "skb->data_len when it returns 0", MinArgs: 1},
	{Name: "tcp_zerocopy_receive", ID: FuncTCPZerocopyReceive, Short: "tzr", Category: attrib.ZcPin,
		Bytes: "zc->length (bytes mapped) when it returns 0", MinArgs: 2},
	{Name: "io_send_zc", ID: FuncIOSendZc, Short: "isz", Category: attrib.Syscall,
		Bytes: "req->cqe.res (bytes sent) when it returns >= 0", MinArgs: 1},
	{Name: "io_sendmsg_zc", ID: FuncIOSendmsgZc, Short: "ismz", Category: attrib.Syscall,
		Bytes: "req->cqe.res (bytes sent) when it returns >= 0", MinArgs: 1},
}

// ByName finds a function of the table.
func ByName(name string) (Function, bool) {
	for _, f := range Functions {
		if f.Name == name {
			return f, true
		}
	}
	return Function{}, false
}

// ByID finds a function by its BPF id.
func ByID(id uint8) (Function, bool) {
	if int(id) < len(Functions) && Functions[id].ID == id {
		return Functions[id], true
	}
	return Function{}, false
}
