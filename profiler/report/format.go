package report

import (
	"fmt"
	"math"
	"time"
)

// Number and unit formatting for every renderer (tables, verdicts, warnings,
// compare): one spelling of a count, a share, a size, a time, a rate.

// Digits groups a count's digits by thousands: 1,234,567.
func Digits(n uint64) string {
	s := fmt.Sprint(n)
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// count is Digits, blank for zero (an empty table cell).
func count(n uint64) string {
	if n == 0 {
		return ""
	}
	return Digits(n)
}

// pctOf is 100*a/b; ok is false without a denominator.
func pctOf(a, b uint64) (pct float64, ok bool) {
	if b == 0 {
		return 0, false
	}
	return 100 * float64(a) / float64(b), true
}

// Percent formats a/b with one decimal, "-" without a denominator.
func Percent(a, b uint64) string {
	p, ok := pctOf(a, b)
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", p)
}

// WholePercent formats a/b rounded to a whole percent, "-" without a
// denominator.
func WholePercent(a, b uint64) string {
	p, ok := pctOf(a, b)
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", p)
}

// ShortPercent formats a/b for a sentence: a whole percent, one decimal
// below 1% (so that a small share does not read as none), 0% without a
// denominator.
func ShortPercent(a, b uint64) string {
	p, _ := pctOf(a, b)
	if p > 0 && p < 1 {
		return fmt.Sprintf("%.1f%%", p)
	}
	return fmt.Sprintf("%.0f%%", p)
}

// signedPercent is how far measured is from ref, signed, "n/a" without ref.
func signedPercent(measured, ref uint64) string {
	if ref == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%+.2f%%", 100*(float64(measured)-float64(ref))/float64(ref))
}

// Share formats a fraction (0.0123) as a percentage with two decimals
// (1.23%): zcprof's own share of the CPU it measures.
func Share(f float64) string { return fmt.Sprintf("%.2f%%", 100*f) }

// signedMillis is a signed difference in ms with µs resolution.
func signedMillis(ns int64) string { return fmt.Sprintf("%+.3f ms", float64(ns)/1e6) }

// Size formats a byte count in binary units: 512 B, 1.5 KiB, 3.2 MiB,
// 1.25 GiB.
func Size(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// byteSize is Size, blank for zero (an empty table cell).
func byteSize(n uint64) string {
	if n == 0 {
		return ""
	}
	return Size(n)
}

// ShortSize is Size for a sentence (verdicts): GiB with one decimal, as
// in 74 B, 1.0 KiB, 3.6 GiB.
func ShortSize(n uint64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return Size(n)
}

// MiB formats a byte count in MiB whatever its size (figures set side by
// side).
func MiB(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// PerMiB is ns per MiB of bytes (the CPU/MiB figures), 0 without bytes.
func PerMiB(ns, bytes uint64) float64 {
	if bytes == 0 {
		return 0
	}
	return float64(ns) / (float64(bytes) / (1 << 20))
}

// PlusMinus is " ±x.x%" (decimals after the point), an interval's
// half-width relative to the mean, or "" without an interval.
func PlusMinus(ci, mean float64, decimals int) string {
	if ci <= 0 || mean == 0 {
		return ""
	}
	return fmt.Sprintf(" ±%.*f%%", decimals, 100*ci/math.Abs(mean))
}

// MicrosPerMiB is a service demand given in ns per MiB, in µs per MiB.
func MicrosPerMiB(ns float64) string { return fmt.Sprintf("%.1f µs/MiB", ns/1e3) }

// Seconds formats nanoseconds as seconds with millisecond resolution.
func Seconds(ns uint64) string { return fmt.Sprintf("%.3f s", float64(ns)/1e9) }

// Millis formats nanoseconds as milliseconds with one decimal.
func Millis(ns uint64) string { return fmt.Sprintf("%.1f ms", float64(ns)/1e6) }

// Duration formats a signed nanosecond figure as Go writes a duration, to
// the microsecond (1.234ms, -56µs), for warnings.
func Duration(ns int64) string { return time.Duration(ns).Round(time.Microsecond).String() }

// Time formats a time in s, ms or µs by its size.
func Time(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.3f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.1f ms", ns/1e6)
	}
	return fmt.Sprintf("%.1f µs", ns/1e3)
}

// secs is Seconds without the unit (a column headed in seconds).
func secs(ns uint64) string { return fmt.Sprintf("%.3f", float64(ns)/1e9) }

// perCall formats a per-call or per-MiB time in ns, µs or ms, blank for
// zero.
func perCall(ns float64) string {
	switch {
	case ns == 0:
		return ""
	case ns < 1e3:
		return fmt.Sprintf("%.0f ns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	default:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	}
}

// Throughput formats bits per second.
func Throughput(bps float64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%.2f Gbit/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%.1f Mbit/s", bps/1e6)
	}
	return fmt.Sprintf("%.0f bit/s", bps)
}

// SizeString is a message size as the CLI takes it (64K, 1M, 1000).
func SizeString(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprint(n)
}
