package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// CSVCategories are the category columns of the CSV, in the taxonomy's
// report order (attrib.CategoryNames; a test keeps the two equal).
var CSVCategories = []string{"copy.tx", "copy.rx", "copy.deferred", "zc.pin", "splice", "pagecache",
	"tcp.tx", "tcp.rx", "ip.dev", "skb.mem", "sched", "lock", "syscall", "other", "tracing"}

// CSVColumns returns the CSV header: stable names (docs/json.md, section
// CSV). One row per entry (a process of `profile`, a side of a `run` cell)
// and path; the entry's own figures repeat on each of its rows so that a
// spreadsheet can filter on any column alone.
func CSVColumns() []string {
	cols := []string{
		"command", "method", "rx_method", "size", "streams", "repeats", "throughput_bps",
		"side", "pid", "comm",
		"entry_on_cpu_ns", "entry_user_ns", "entry_kernel_ns", "entry_softirq_ns", "entry_hardirq_ns",
		"entry_schedstat_ns", "entry_times_user_ns", "entry_times_system_ns", "entry_ns_per_mib",
		"path", "calls", "bytes", "cpu_ns", "softirq_ns", "hardirq_ns", "ns_per_call", "ns_per_mib",
	}
	for _, c := range CSVCategories {
		cols = append(cols, "cat_"+c+"_ns", "cat_"+c+"_ci95_ns")
	}
	return append(cols,
		"tx_copied_bytes", "tx_spliced_bytes", "tx_pinned_bytes", "tx_deferred_copy_bytes",
		"rx_copied_bytes", "rx_mapped_bytes", "verdict", "rx_spliced_bytes", "rx_discarded_bytes",
		"topology", "host", "kernel")
}

var csvWidth = len(CSVColumns())

// csvEntry is what the rows of one entry share.
type csvEntry struct {
	method, rxMethod, side    string
	topology                  string
	host                      Host // where the entry was measured
	size, streams, repeats    int
	throughput, entryNSPerMiB float64
	hasCell                   bool
}

// WriteCSV writes the document as CSV: a header, then one row per entry
// and path (CSVColumns). Paths without categories leave the category
// columns empty; run cells without a figure leave it empty too.
func WriteCSV(w io.Writer, d *Document) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVColumns()); err != nil {
		return err
	}
	for _, p := range d.Processes {
		if err := writeCSVEntry(cw, d.Command, csvEntry{host: d.Host}, p); err != nil {
			return err
		}
	}
	for _, c := range d.Cells {
		for _, side := range c.Sides() {
			e := csvEntry{method: c.Method, rxMethod: c.RxMethod, side: side.Name, size: c.Size,
				streams: c.Streams, repeats: c.Repeats, throughput: c.ThroughputBps, entryNSPerMiB: side.NSPerMiB, hasCell: true,
				topology: c.Topology, host: d.Host}
			if h := side.Process.Host; h != nil {
				e.host = h.Host
			}
			if err := writeCSVEntry(cw, d.Command, e, side.Process); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func writeCSVEntry(cw *csv.Writer, command string, e csvEntry, p Process) error {
	u := func(n uint64) string { return strconv.FormatUint(n, 10) }
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	i := func(n int) string { return strconv.Itoa(n) }
	cellCols := []string{"", "", "", "", "", "", ""}
	if e.hasCell {
		cellCols = []string{e.method, e.rxMethod, i(e.size), i(e.streams), i(e.repeats), f(e.throughput), e.side}
	}
	c := p.CPU
	entryMiB := ""
	if e.hasCell {
		entryMiB = f(e.entryNSPerMiB)
	}
	for _, path := range p.Paths {
		row := append([]string{command}, cellCols...)
		row = append(row, i(p.PID), p.Comm,
			u(c.OnCPUNS), u(c.UserNS), u(c.KernelNS), u(c.SoftirqNS), u(c.HardirqNS),
			u(c.SchedstatNS), u(c.TimesUserNS), u(c.TimesSystemNS), entryMiB,
			path.Path, u(path.Calls), u(path.Bytes), u(path.CPUNS), u(path.SoftirqNS), u(path.HardirqNS),
			f(path.NSPerCall), f(path.NSPerMiB))
		byName := map[string]Category{}
		for _, cat := range path.Categories {
			byName[cat.Category] = cat
		}
		for _, name := range CSVCategories {
			if cat, ok := byName[name]; ok {
				row = append(row, u(cat.CPUNS), u(cat.CI95NS))
			} else {
				row = append(row, "", "")
			}
		}
		if zc := path.Zerocopy; zc != nil {
			row = append(row, u(zc.TxCopiedBytes), u(zc.TxSplicedBytes), u(zc.TxPinnedBytes), u(zc.TxDeferredCopyBytes),
				u(zc.RxCopiedBytes), u(zc.RxMappedBytes), zc.Verdict, u(zc.RxSplicedBytes), u(zc.RxDiscardedBytes))
		} else {
			row = append(row, "", "", "", "", "", "", "", "", "")
		}
		row = append(row, e.topology, e.host.Hostname, e.host.Kernel)
		if len(row) != csvWidth {
			return fmt.Errorf("csv: row has %d columns, header %d", len(row), csvWidth)
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	return nil
}
