package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/zcprof/zcprof/profiler/report"
)

// Load reads one zcprof JSON document. Every failure is one line naming
// the file: missing, unreadable, not JSON, not a zcprof document, another
// schema version.
func Load(path string) (*report.Document, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no such file", path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	var d report.Document
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: not a zcprof JSON document (%v)", path, err)
	}
	switch {
	case d.Schema == "":
		return nil, fmt.Errorf("%s: not a zcprof JSON document (no schema field; make it with --json)", path)
	case d.Schema != report.Schema:
		return nil, fmt.Errorf("%s: schema %q, this zcprof reads %q", path, d.Schema, report.Schema)
	case len(d.Cells) == 0 && len(d.Processes) == 0:
		return nil, fmt.Errorf("%s: no cells or processes to compare", path)
	}
	return &d, nil
}

// LoadSide reads one side of a comparison: a document, or a comma-separated
// list of documents of one command, pooled.
func LoadSide(arg string) (File, error) {
	f := File{Name: arg}
	for _, path := range strings.Split(arg, ",") {
		d, err := Load(path)
		if err != nil {
			return File{}, err
		}
		if len(f.Docs) > 0 && d.Command != f.Docs[0].Command {
			return File{}, fmt.Errorf("%s: a %q document pooled with a %q one", path, d.Command, f.Docs[0].Command)
		}
		f.Docs = append(f.Docs, d)
	}
	return f, nil
}
