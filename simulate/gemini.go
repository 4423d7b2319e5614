package simulate

import (
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/gemini"
)

// GeminiFleetModels are the models FleetOf draws from for Gemini: each has
// a flex tier in the default price table.
var GeminiFleetModels = []string{"gemini-2.5-flash-lite", "gemini-2.5-flash", "gemini-2.5-pro"}

// GeminiFlexLatency is the range a Gemini flex call's latency is drawn
// from (Config.FlexLatencyRange): the API's target, 1 to 15 minutes, far
// slower than OpenAI's flex (DefaultFlexLatency).
var GeminiFlexLatency = [2]time.Duration{time.Minute, gemini.FlexTarget}

// GeminiFlexRange is GeminiFlexLatency as a Config.FlexLatencyRange.
func GeminiFlexRange(string) (lo, hi time.Duration) {
	return GeminiFlexLatency[0], GeminiFlexLatency[1]
}

// flexTimeout is the upstream timeout a simulated provider of the name
// states for its flex tier, as its adapter does: Gemini's
// (gemini.FlexUpstreamTimeout), none for the others.
func flexTimeout(provider string) time.Duration {
	if provider == gemini.Name {
		return (&gemini.Provider{}).UpstreamTimeout(llmfleet.TierFlex)
	}
	return 0
}

// UpstreamTimeout returns FlexTimeout for the flex tier, 0 for the
// others (llmfleet.TierTimeouts).
func (p *Provider) UpstreamTimeout(tier llmfleet.Tier) time.Duration {
	if tier == llmfleet.TierFlex {
		return p.FlexTimeout
	}
	return 0
}
