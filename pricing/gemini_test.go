package pricing

import (
	"math"
	"testing"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiwire"
)

// TestGemini: the Gemini prices, read from an answer's usage metadata:
// thinking billed as output, cached content at 0.1x, batch and flex at
// half, the long-context prices of the Pro models.
func TestGemini(t *testing.T) {
	tab := Default()
	// 1M prompt tokens of which 400K cached, 200K answer and 800K thinking.
	u := (&geminiwire.UsageMetadata{PromptTokenCount: 1e6, CachedContentTokenCount: 4e5,
		CandidatesTokenCount: 2e5, ThoughtsTokenCount: 8e5}).Usage()
	flash := 0.6*0.3 + 0.4*0.03 + 1*2.5
	pro := 0.6*2.5 + 0.4*0.25 + 1*15 // over 200K: the long-context prices
	for _, c := range []struct {
		model string
		tier  llmfleet.Tier
		want  float64
	}{
		{"gemini-2.5-flash", llmfleet.TierStandard, flash},
		{"gemini-2.5-flash", llmfleet.TierFlex, flash / 2},
		{"gemini-2.5-flash", llmfleet.TierBatch, flash / 2},
		{"gemini-2.5-pro", llmfleet.TierStandard, pro},
		{"gemini-flash-latest", llmfleet.TierStandard, flash},
		{"gemini-2.0-flash", llmfleet.TierStandard, 0.6*0.1 + 0.4*0.025 + 1*0.4},
	} {
		got, ok := tab.TierCost("gemini", c.model, u, c.tier)
		if !ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("TierCost(%s, %s) = %v, %v; want %v", c.model, c.tier, got, ok, c.want)
		}
	}
	small := llmfleet.Usage{InputTokens: 1000, OutputTokens: 1000}
	if got, _ := tab.Cost("gemini", "gemini-3.1-pro-preview", small, llmfleet.RouteSync); math.Abs(got-(0.002+0.012)) > 1e-12 {
		t.Errorf("3.1 Pro under 200K: %v", got)
	}
	if !tab.Flex("gemini", "gemini-3-flash-preview") || tab.Flex("gemini", "gemini-2.0-flash") {
		t.Error("Flex")
	}
	if _, ok := tab.Lookup("anthropic", "claude-sonnet-4-6"); !ok {
		t.Error("the Gemini part replaced the rest of the table")
	}
}
