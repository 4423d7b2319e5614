package dispatch

import (
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// load replaces what a model learnt with the fleet's samples (the latest
// keep of them), leaves the other models alone, and ends an exploration.
func TestPredictorLoad(t *testing.T) {
	p := newPredictor(time.Hour, nil, 0.5, 3)
	p.observe("fake", "m1", time.Minute)
	p.observe("fake", "m2", 2*time.Minute)
	p.explore("fake", "m3")
	p.load([]llmfleet.TurnaroundSample{
		{Provider: "fake", Model: "m1", Turnaround: 10 * time.Second},
		{Provider: "fake", Model: "m1", Turnaround: 20 * time.Second},
		{Provider: "fake", Model: "m1", Turnaround: 30 * time.Second},
		{Provider: "fake", Model: "m1", Turnaround: 40 * time.Second},
		{Provider: "fake", Model: "m3", Turnaround: 5 * time.Second},
	})
	for _, tc := range []struct {
		model string
		want  time.Duration
	}{
		{"m1", 30 * time.Second}, // median of the latest three: 20s, 30s, 40s
		{"m2", 2 * time.Minute},  // not in the samples: as learnt here
		{"m3", 5 * time.Second},  // learnt from the fleet
		{"m4", time.Hour},        // nothing anywhere: the prior
	} {
		if got := p.predict("fake", tc.model); got != tc.want {
			t.Errorf("%s: predicted %v, want %v", tc.model, got, tc.want)
		}
	}
	if p.exploring[predictorKey("fake", "m3")] {
		t.Error("m3 still marked as being explored after the fleet's samples came")
	}
}
