package pricing

import (
	"math"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
)

// TestFlexTier: the flex tier is priced with its multiplier on every token
// kind, cached input included; a model without one is priced at the batch
// route when the provider reports flex served anyway; Flex tells which
// models have the tier.
func TestFlexTier(t *testing.T) {
	tab := Default()
	u := llmfleet.Usage{InputTokens: 1e6, OutputTokens: 1e6, CacheReadInputTokens: 1e6}
	for _, c := range []struct {
		model string
		tier  llmfleet.Tier
		want  float64
	}{
		{"o4-mini", llmfleet.TierStandard, 1.1 + 4.4 + 0.275},
		{"o4-mini", llmfleet.TierFlex, (1.1 + 4.4 + 0.275) / 2},
		{"o4-mini", llmfleet.TierBatch, (1.1 + 4.4 + 0.275) / 2},
		{"o4-mini", llmfleet.TierPriority, 1.1 + 4.4 + 0.275},
		{"gpt-5-mini", llmfleet.TierFlex, (0.25 + 2 + 0.025) / 2},
		{"gpt-4.1", llmfleet.TierFlex, (2 + 8 + 0.5) / 2}, // no flex-multiplier: batch rates
		{"text-embedding-3-small", llmfleet.TierBatch, 0.02/2 + 0.01/2},
	} {
		got, ok := tab.TierCost("openai", c.model, u, c.tier)
		if !ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("TierCost(%s, %s) = %v, %v; want %v", c.model, c.tier, got, ok, c.want)
		}
	}
	if got, _ := tab.Cost("openai", "o3", u, llmfleet.RouteFlex); math.Abs(got-(2+8+0.5)/2) > 1e-9 {
		t.Errorf("Cost(o3, flex route) = %v", got)
	}
	for model, want := range map[string]bool{"o3": true, "o4-mini": true, "gpt-5": true, "gpt-5-nano": true,
		"gpt-4.1": false, "gpt-4o": false, "text-embedding-3-small": false, "no-such-model": false} {
		if got := tab.Flex("openai", model); got != want {
			t.Errorf("Flex(%s) = %v, want %v", model, got, want)
		}
	}
	if tab.Flex("anthropic", "claude-sonnet-4-6") {
		t.Error("an Anthropic model has a flex tier")
	}
}

// TestFlexMultiplierMerge: a config file gives a model the flex tier.
func TestFlexMultiplierMerge(t *testing.T) {
	tab := Default()
	if err := tab.Merge(strings.NewReader("openai:\n  models:\n    gpt-4.1: {flex-multiplier: 0.4}\n")); err != nil {
		t.Fatal(err)
	}
	if !tab.Flex("openai", "gpt-4.1") {
		t.Fatal("merged flex-multiplier not seen")
	}
	if got, _ := tab.TierCost("openai", "gpt-4.1", llmfleet.Usage{OutputTokens: 1e6}, llmfleet.TierFlex); math.Abs(got-3.2) > 1e-9 {
		t.Errorf("flex output of gpt-4.1 = %v, want 3.2", got)
	}
	if err := tab.Merge(strings.NewReader("openai:\n  models:\n    gpt-4.1: {flex-multiplier: -1}\n")); err == nil {
		t.Error("a negative flex-multiplier was accepted")
	}
}
