// Package report is zcprof's result model (the zcprof/v1 JSON contract of
// docs/json.md) and its renderers. Every output is made from these types.
//
// Code map: model.go (the types, every field in docs/json.md), json.go,
// table.go (`zcprof profile`'s table: writePaths renders the PATH rows,
// with the CPU, CPU/CALL and CPU/MiB columns), run_table.go (`zcprof run`'s
// table and verdicts), categories_table.go and attribution.go (the
// categories and traced functions under each path, and why a backend was
// chosen), csv.go, pprof.go, stacks.go (weighted stacks, folded), html/
// (the HTML report), format.go (every number and unit: digit grouping,
// percentages, sizes, times, rates).
package report
