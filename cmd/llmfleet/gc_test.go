package main

import (
	"runtime/debug"
	"testing"
)

// TestGCPercent: --gc-percent sets the collector's target unless GOGC is
// in the environment, which the runtime has applied already.
func TestGCPercent(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	setGCPercent(300, func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != 300 {
		t.Errorf("GOGC unset: gc percent %d, want 300", got)
	}
	setGCPercent(300, func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=50 in the environment: gc percent %d, want it left alone", got)
	}
}
