package llmfleet_test

import (
	"testing"

	"github.com/llmfleet/llmfleet/internal/limits"
)

// TestLimits fails when the module breaks issue 22's size limits: receiver
// types over 25 methods in dispatch/ and proxy/ and over 35 elsewhere (the
// emulators and contract suites aside), production files over 400 lines
// and production functions over 80 lines (see internal/limits).
func TestLimits(t *testing.T) {
	f, err := limits.Measure(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range limits.Check(f) {
		t.Error(v)
	}
}
