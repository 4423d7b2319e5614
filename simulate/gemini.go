package simulate

import (
	"time"

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
