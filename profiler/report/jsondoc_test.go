package report

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// jsonTypes walks the zcprof/v1 model from Document and returns, per struct
// type, its JSON field names (json:"-" fields are not part of the contract).
func jsonTypes() map[string][]string {
	out := map[string][]string{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		if _, seen := out[t.Name()]; seen {
			return
		}
		out[t.Name()] = []string{}
		var fields func(owner string, t reflect.Type)
		fields = func(owner string, t reflect.Type) {
			for i := range t.NumField() {
				f := t.Field(i)
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if name == "-" || !f.IsExported() {
					continue
				}
				if name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct {
					// encoding/json inlines an untagged embedded struct.
					fields(owner, f.Type)
					walk(f.Type)
					continue
				}
				if name == "" {
					name = f.Name
				}
				out[owner] = append(out[owner], name)
				walk(f.Type)
			}
		}
		fields(t.Name(), t)
	}
	walk(reflect.TypeOf(Document{}))
	return out
}

// docSections splits docs/json.md into "## Name" sections and returns the
// field names of each section's table rows ("| `name` | ...").
func docSections(t *testing.T, path string) map[string][]string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([a-z0-9_]+)` \\|")
	out := map[string][]string{}
	cur := ""
	for _, line := range strings.Split(string(b), "\n") {
		if name, ok := strings.CutPrefix(line, "## "); ok {
			cur = strings.TrimSpace(name)
			out[cur] = []string{}
			continue
		}
		if m := row.FindStringSubmatch(line); m != nil && cur != "" {
			out[cur] = append(out[cur], m[1])
		}
	}
	return out
}

// docs/json.md documents every field of the contract and nothing else:
// adding a field without its line, or removing one and leaving the line,
// fails here.
func TestJSONContractIsDocumented(t *testing.T) {
	doc := docSections(t, "../../docs/json.md")
	for typ, fields := range jsonTypes() {
		sec, ok := doc[typ]
		if !ok {
			t.Errorf("docs/json.md: no section \"## %s\" (fields %v)", typ, fields)
			continue
		}
		for _, f := range fields {
			if !contains(sec, f) {
				t.Errorf("docs/json.md ## %s: field %q is not documented", typ, f)
			}
		}
		for _, f := range sec {
			if !contains(fields, f) {
				t.Errorf("docs/json.md ## %s: documents %q, which %s does not have", typ, f, typ)
			}
		}
	}
}

// The CSV section lists every column, in order.
func TestCSVColumnsAreDocumented(t *testing.T) {
	doc := docSections(t, "../../docs/json.md")["CSV"]
	var want []string
	for _, c := range CSVColumns() {
		if strings.HasPrefix(c, "cat_") {
			continue // documented once as cat_<category>_ns and _ci95_ns
		}
		want = append(want, c)
	}
	var got []string
	for _, c := range doc {
		if !strings.HasPrefix(c, "cat_") {
			got = append(got, c)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("docs/json.md ## CSV columns\n got %v\nwant %v", got, want)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}
