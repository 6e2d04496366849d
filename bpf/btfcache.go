package bpf

import "github.com/cilium/ebpf/btf"

// KernelBTF shares the decoded kernel BTF across every collection this
// process loads: pass it as ebpf.CollectionOptions.Cache. Without it
// cilium/ebpf decodes /sys/kernel/btf/vmlinux afresh on each load (about
// 0.2 s of CPU here, seconds under emulation in make vmtest), and a session
// loads several collections.
var KernelBTF = btf.NewCache()
