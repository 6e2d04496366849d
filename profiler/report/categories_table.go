package report

import (
	"fmt"
	"strings"
)

// categoryCell renders a path's categories on one line, largest first:
// estimates as "≈ 12.3 ms ±0.4 (33%)", exact figures without ≈ and ±.
func categoryCell(p Path) string {
	if len(p.Categories) == 0 {
		return ""
	}
	var total uint64
	for _, c := range p.Categories {
		total += c.CPUNS
	}
	parts := make([]string, 0, len(p.Categories))
	for _, c := range p.Categories {
		share := ""
		if total > 0 {
			share = " (" + WholePercent(c.CPUNS, total) + ")"
		}
		if c.Exact {
			parts = append(parts, fmt.Sprintf("%s %s%s", c.Category, Millis(c.CPUNS), share))
		} else {
			parts = append(parts, fmt.Sprintf("%s ≈%s ±%s%s", c.Category, Millis(c.CPUNS), Millis(c.CI95NS), share))
		}
	}
	return strings.Join(parts, ", ")
}
