package exact

import (
	"strings"
	"testing"

	"github.com/zcprof/zcprof/profiler/kernel"
	"github.com/zcprof/zcprof/profiler/ksym"
)

// kernelLike returns what a kernel with every function, each with one BTF
// prototype of n arguments, would have.
func kernelLike(n int) KernelInfo {
	k := KernelInfo{Symbols: ksym.Names{}, BTFArgs: map[string][]int{}}
	for _, f := range Functions {
		k.Symbols[f.Name] = true
		k.BTFArgs[f.Name] = []int{n}
	}
	return k
}

func names(fs []Function) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

func TestPlanEverythingPresent(t *testing.T) {
	for _, mode := range []string{kernel.Fentry, kernel.Kprobe} {
		try, skipped := Plan(mode, Functions, kernelLike(6))
		if len(try) != len(Functions) || len(skipped) != 0 {
			t.Errorf("%s: try %v, skipped %v", mode, names(try), skipped)
		}
	}
}

func TestPlanSkipsWithReasons(t *testing.T) {
	k := kernelLike(6)
	// 6.1: no splice_to_socket (it came with MSG_SPLICE_PAGES in 6.5).
	delete(k.Symbols, "splice_to_socket")
	// A static function present twice (two BTF functions of one name).
	k.BTFArgs["simple_copy_to_iter"] = []int{4, 4}
	// In kallsyms, no BTF prototype.
	delete(k.BTFArgs, "io_sendmsg_zc")
	// A prototype with fewer arguments than the fexit program reads.
	k.BTFArgs["skb_copy_datagram_iter"] = []int{3}

	try, skipped := Plan(kernel.Fentry, Functions, k)
	want := map[string]string{
		"splice_to_socket":       "not in /proc/kallsyms",
		"simple_copy_to_iter":    "2 BTF functions share this name",
		"io_sendmsg_zc":          "no BTF prototype",
		"skb_copy_datagram_iter": "BTF prototype has 3 arguments; the fexit program reads argument 4",
	}
	if len(skipped) != len(want) {
		t.Errorf("skipped %v, want %d entries", skipped, len(want))
	}
	for fn, frag := range want {
		if !strings.Contains(skipped[fn], frag) {
			t.Errorf("%s: reason %q, want it to contain %q", fn, skipped[fn], frag)
		}
	}
	if len(try) != len(Functions)-len(want) {
		t.Errorf("fentry tries %v", names(try))
	}

	// kprobes need no BTF: only the missing symbol is skipped.
	try, skipped = Plan(kernel.Kprobe, Functions, k)
	if len(skipped) != 1 || skipped["splice_to_socket"] == "" || len(try) != len(Functions)-1 {
		t.Errorf("kprobe: try %v, skipped %v", names(try), skipped)
	}
}

func TestPlanWithoutKernelFacts(t *testing.T) {
	// Unreadable kallsyms: let the kernel say what is missing.
	try, _ := Plan(kernel.Kprobe, Functions, KernelInfo{})
	if len(try) != len(Functions) {
		t.Errorf("kprobe without kallsyms tries %d functions", len(try))
	}
	// No BTF: fentry cannot attach anything.
	try, skipped := Plan(kernel.Fentry, Functions, KernelInfo{})
	if len(try) != 0 || !strings.Contains(skipped["tcp_sendmsg_locked"], "no kernel BTF") {
		t.Errorf("fentry without BTF: try %v, skipped %v", names(try), skipped)
	}
}

func TestSelect(t *testing.T) {
	fs, err := Select([]string{"skb_copy_ubufs", "tcp_sendmsg_locked"})
	if err != nil {
		t.Fatal(err)
	}
	// Table order, not argument order.
	if got := strings.Join(names(fs), ","); got != "tcp_sendmsg_locked,skb_copy_ubufs" {
		t.Errorf("Select = %s", got)
	}
	if fs, _ := Select(nil); len(fs) != len(Functions) {
		t.Errorf("Select(nil) = %d functions", len(fs))
	}
	_, err = Select([]string{"tcp_sendmsg"})
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), `unknown function "tcp_sendmsg"`) {
		t.Errorf("unknown function: %v", err)
	}
}

func TestFunctionTable(t *testing.T) {
	seen := map[string]bool{}
	for i, f := range Functions {
		if int(f.ID) != i {
			t.Errorf("%s: id %d at index %d (ids index the table)", f.Name, f.ID, i)
		}
		// Program names: fe_/fx_/kp_/kr_ + Short within BPF_OBJ_NAME_LEN-1.
		if len("fx_"+f.Short) > 15 || seen[f.Short] {
			t.Errorf("%s: short name %q too long or duplicate", f.Name, f.Short)
		}
		seen[f.Short] = true
		if f.Category == "" || f.Bytes == "" {
			t.Errorf("%s: no category or bytes description", f.Name)
		}
	}
	if len(Functions) != int(numFuncs) {
		t.Errorf("%d functions, enum has %d", len(Functions), numFuncs)
	}
	// The iov_iter copy routines are flagged (refused on distro kernels).
	for _, n := range []string{"_copy_from_iter", "_copy_to_iter"} {
		if f, _ := ByName(n); !f.Copy {
			t.Errorf("%s not flagged as a copy routine", n)
		}
	}
}
