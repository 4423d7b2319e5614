package main

import "runtime/debug"

// defaultGCPercent is serve's GOGC. The proxy's live heap is a few
// megabytes (pools, the dashboard's history, buffers), while every request
// allocates some 15 KB that dies with it: at Go's default of 100 the
// collector runs dozens of times a second under load and takes a tenth of
// the CPU. At 400 it runs a quarter as often, for a heap a few megabytes
// larger.
const defaultGCPercent = 400

// setGCPercent sets the collector's target to percent (negative: off),
// unless the GOGC environment variable, which the runtime reads itself,
// is set.
func setGCPercent(percent int, getenv func(string) string) {
	if getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(percent)
}
