package simrun

import (
	"fmt"

	"github.com/llmfleet/llmfleet/gemini"
	"github.com/llmfleet/llmfleet/simulate"
)

// ForProvider returns base with what its Provider brings: for gemini, flex
// latencies of minutes (simulate.GeminiFlexRange) unless flexSet (the
// latency was given). (Its flex calls' upstream timeout is the one the
// simulated provider states for the tier, as serve's Gemini provider
// does: gemini.FlexUpstreamTimeout, 20 minutes, which the flex target's
// 15 fit.) An unknown provider is an error.
func ForProvider(base simulate.Config, flexSet bool) (simulate.Config, error) {
	switch base.Provider {
	case "", "anthropic", "openai":
		return base, nil
	case gemini.Name:
		if !flexSet {
			base.FlexLatency, base.FlexLatencyRange = nil, simulate.GeminiFlexRange
		}
		return base, nil
	}
	return base, fmt.Errorf("--provider: unknown provider %q (anthropic, openai, gemini)", base.Provider)
}

// FleetModels are the models a generated fleet (--fleet) of provider
// draws from.
func FleetModels(provider string) []string {
	switch provider {
	case "openai":
		return simulate.OpenAIFleetModels
	case gemini.Name:
		return simulate.GeminiFleetModels
	}
	return simulate.FleetModels
}
