package compare

// Schema names the JSON of `zcprof compare --json`.
const Schema = "zcprof-compare/v1"

// TestName is the significance test applied over the repeats.
const TestName = "Welch's two-sided t-test over the repeats"

// Result is a whole comparison: the base document against each other one.
type Result struct {
	Schema      string       `json:"schema"`
	Test        string       `json:"test"`
	Alpha       float64      `json:"alpha"`
	Comparisons []Comparison `json:"comparisons"`
}

// Comparison is the base file against one other file.
type Comparison struct {
	Base  string `json:"base"`
	New   string `json:"new"`
	Pairs []Pair `json:"pairs"`
	// Unmatched names what only one side has.
	OnlyBase []string `json:"only_base,omitempty"`
	OnlyNew  []string `json:"only_new,omitempty"`
}

// Pair is one matched cell (run) or process (profile).
type Pair struct {
	Base string `json:"base"` // e.g. "write→read 64K ×1"
	New  string `json:"new"`
	Rows []Row  `json:"rows"`
}

// Row is one figure of a pair.
type Row struct {
	Figure string  `json:"figure"` // stats key, e.g. "sender.ns_per_mib"
	Label  string  `json:"label"`  // for people, e.g. "sender CPU/MiB"
	Unit   string  `json:"unit"`   // "bps", "ns", "ns/MiB"
	Base   Summary `json:"base"`
	New    Summary `json:"new"`
	// DeltaPct is (new - base) / base in percent (absent when base is 0
	// or a side lacks the figure).
	DeltaPct *float64 `json:"delta_pct,omitempty"`
	// Testable: both sides have at least two runs of the figure.
	Testable    bool    `json:"testable"`
	P           float64 `json:"p,omitempty"`
	Significant bool    `json:"significant"`
}

// Summary is one side's figure: mean, and over repeats its spread.
type Summary struct {
	Present bool    `json:"present"`
	N       int     `json:"n"`
	Mean    float64 `json:"mean"`
	SD      float64 `json:"sd"`
	CI      float64 `json:"ci_half"` // half-width of the confidence interval of the mean
	Level   float64 `json:"level"`
}
