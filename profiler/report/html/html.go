// Package html renders zcprof results as one self-contained HTML file:
// the data as JSON, the page's script and Chart.js (vendored, MIT, see
// chart.js.LICENSE.md) inline, so the file works offline and can be
// attached to a patch review.
//
// Chart.js is a committed copy of the npm package's dist/chart.umd.min.js
// embedded with go:embed rather than fetched at build time: `go build`
// then needs no network and no node toolchain (like the committed bpf2go
// objects). `make vendor-chartjs` refreshes it from the npm registry.
package html

import (
	_ "embed"
	"encoding/json"
	"fmt"
	stdhtml "html"
	"io"
	"strings"

	"github.com/zcprof/zcprof/profiler/compare"
	"github.com/zcprof/zcprof/profiler/report"
)

//go:embed chart.umd.min.js
var chartJS string

//go:embed page.js
var pageJS string

//go:embed page.css
var pageCSS string

// ChartJSVersion is the vendored Chart.js release.
const ChartJSVersion = "4.6.1"

// page is the data the page script draws from.
type page struct {
	Kind    string           `json:"kind"` // "run", "profile" or "compare"
	Title   string           `json:"title"`
	Doc     *report.Document `json:"doc,omitempty"`
	Compare *compare.Result  `json:"compare,omitempty"`
	// Hosts: in a two-host run, which host measured each side
	// (report.SideHosts, as the table says it).
	Hosts []string `json:"hosts,omitempty"`
}

// Write renders a `run` or `profile` document.
func Write(w io.Writer, d *report.Document) error {
	title := "zcprof " + d.Command
	if d.Host.Kernel != "" {
		title += " on " + d.Host.Kernel
	}
	return write(w, page{Kind: d.Command, Title: title, Doc: d, Hosts: report.SideHosts(d)})
}

// WriteCompare renders a comparison.
func WriteCompare(w io.Writer, r *compare.Result) error {
	return write(w, page{Kind: "compare", Title: "zcprof compare", Compare: r})
}

func write(w io.Writer, p page) error {
	// json.Marshal escapes <, > and & (\u003c...), so the data cannot
	// end its script element.
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s</title>
<script>
// Script errors are collected first, so that a report that failed to draw
// says why (and the rendering test can see it).
window.zcErrors = [];
window.addEventListener("error", function (e) { window.zcErrors.push(String(e.message || e)); });
(function () { var ce = console.error; console.error = function () { window.zcErrors.push(Array.prototype.join.call(arguments, " ")); ce.apply(console, arguments); }; })();
</script>
<style>%s</style>
</head><body>
<h1 id="title"></h1>
<div id="meta"></div>
<div id="charts"></div>
<pre id="zc-status" hidden></pre>
<script id="zc-data" type="application/json">%s</script>
<script>/* Chart.js %s, MIT License, (c) Chart.js Contributors */
%s</script>
<script>%s</script>
</body></html>
`, stdhtml.EscapeString(p.Title), pageCSS, data, ChartJSVersion, chartJS, pageJS)
	_, err = io.WriteString(w, b.String())
	return err
}
