package attrib

import (
	"slices"
	"testing"

	"github.com/zcprof/zcprof/profiler/report"
)

// The CSV has one column pair per category; a new category must get its
// columns (and a line in docs/json.md).
func TestCSVCategoriesAreTheTaxonomy(t *testing.T) {
	if !slices.Equal(report.CSVCategories, CategoryNames) {
		t.Fatalf("report.CSVCategories %v != attrib.CategoryNames %v", report.CSVCategories, CategoryNames)
	}
}
