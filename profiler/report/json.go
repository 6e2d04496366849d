package report

import (
	"encoding/json"
	"io"
)

// WriteJSON writes the document as one indented zcprof/v1 JSON object.
func WriteJSON(w io.Writer, d *Document) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}
