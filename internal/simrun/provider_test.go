package simrun

import (
	"slices"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/gemini"
	"github.com/llmfleet/llmfleet/simulate"
)

func TestForProvider(t *testing.T) {
	cfg, err := ForProvider(simulate.Config{Provider: "gemini"}, false)
	if err != nil || cfg.Policy.UpstreamTimeout != 0 || cfg.FlexLatencyRange == nil {
		t.Fatalf("gemini: %+v, %v", cfg.Policy, err)
	}
	if lo, hi := cfg.FlexLatencyRange("gemini-2.5-flash"); lo != time.Minute || hi != gemini.FlexTarget {
		t.Errorf("gemini flex latency %s-%s", lo, hi)
	}
	given := func(string) (time.Duration, time.Duration) { return time.Second, 2 * time.Second }
	cfg, _ = ForProvider(simulate.Config{Provider: "gemini", FlexLatencyRange: given}, true)
	if lo, _ := cfg.FlexLatencyRange("m"); lo != time.Second {
		t.Error("a given --flex-latency was replaced")
	}
	if cfg, _ := ForProvider(simulate.Config{Provider: "openai"}, false); cfg.Policy.UpstreamTimeout != 0 || cfg.FlexLatencyRange != nil {
		t.Errorf("openai changed: %+v", cfg.Policy)
	}
	if _, err := ForProvider(simulate.Config{Provider: "vertex"}, false); err == nil {
		t.Error("an unknown provider taken")
	}
	if !slices.Equal(FleetModels("gemini"), simulate.GeminiFleetModels) || !slices.Equal(FleetModels(""), simulate.FleetModels) {
		t.Error("fleet models")
	}
}
