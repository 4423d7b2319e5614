package simrun

import (
	"fmt"

	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/gemini"
	"github.com/llmfleet/llmfleet/simulate"
)

// ForProvider returns base with what its Provider brings: for gemini, flex
// latencies of minutes (simulate.GeminiFlexRange) unless flexSet (the
// latency was given), and the upstream timeout of a fleet that routes
// Gemini flex (gemini.UpstreamTimeout: 20 minutes, which the flex
// target's 15 fit), as serve runs one. An unknown provider is an error.
func ForProvider(base simulate.Config, flexSet bool) (simulate.Config, error) {
	switch base.Provider {
	case "", "anthropic", "openai":
		return base, nil
	case gemini.Name:
		if !flexSet {
			base.FlexLatency, base.FlexLatencyRange = nil, simulate.GeminiFlexRange
		}
		timeout := base.Policy.UpstreamTimeout
		if timeout == 0 {
			timeout = dispatch.DefaultUpstreamTimeout
		}
		base.Policy.UpstreamTimeout = gemini.UpstreamTimeout(timeout)
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
