package simulate

import (
	"testing"

	"github.com/llmfleet/llmfleet/dispatch"
)

// A Gemini fleet: flex at half price takes minutes, so the engine sends
// flex only what has minutes of budget, batches what has more, and keeps
// seconds-budgets on the standard tier; sheds fall back within budget.
// The flex calls' upstream timeout is the one the provider states for its
// flex tier, which outlasts the flex target (15 minutes), not the default
// 10 minutes (see TestGeminiFlexUpstreamTimeout).
func TestGeminiFleet(t *testing.T) {
	turns := FleetOf(GeminiFleetModels, 60, 4, 3)
	cfg := Config{Name: "llmfleet", Provider: "gemini", Seed: 5, FlexLatencyRange: GeminiFlexRange}
	r := run(t, cfg, turns)
	t.Logf("gemini: %+v", r)
	if r.Routes["flex"] == 0 || r.Routes["batch"] == 0 || r.Routes["sync"] == 0 {
		t.Errorf("routes %v", r.Routes)
	}
	// At most one budget missed of 240: which flex latency a call draws
	// follows goroutine order (one random source), which the race
	// detector reorders, and a fallback now and then draws one past its
	// reserve (as TestSimulateGemini in cmd/llmfleet allows).
	if r.SavedUSD <= 0 || r.BudgetMisses > 1 || r.Errors != 0 || r.CostUSD <= 0 {
		t.Errorf("saved %v, misses %d, errors %d, cost %v", r.SavedUSD, r.BudgetMisses, r.Errors, r.CostUSD)
	}
	cfg.FlexRefusal = 0.6
	shed := run(t, cfg, turns)
	t.Logf("gemini, 60%% shed: %+v", shed)
	if shed.BudgetMisses > 1 || shed.Errors != 0 || shed.FlexFallbacks == 0 {
		t.Errorf("shed: misses %d, errors %d, fallbacks %d", shed.BudgetMisses, shed.Errors, shed.FlexFallbacks)
	}
	batch := run(t, Config{Name: "prefer-batch", Provider: "gemini", Seed: 5, FlexLatencyRange: GeminiFlexRange,
		Policy: dispatch.Policy{PreferBatch: true}}, turns)
	t.Logf("gemini, prefer-batch: %+v", batch)
	if batch.BudgetMisses > 1 || batch.Errors != 0 {
		t.Errorf("prefer-batch: misses %d, errors %d", batch.BudgetMisses, batch.Errors)
	}
}

// TestGeminiFlexUpstreamTimeout: with the engine's default upstream
// timeout (10 minutes), the flex calls Gemini takes longer than that to
// answer (its target is up to 15) are not cut: the provider states a
// longer timeout for its flex tier (llmfleet.TierTimeouts,
// gemini.FlexUpstreamTimeout), which bounds them. Before it did, such
// calls were cut after they may have been billed, and answered with an
// error though their budgets had time left; a provider stating no timeout
// of its own still has them cut, as the second run shows.
func TestGeminiFlexUpstreamTimeout(t *testing.T) {
	turns := FleetOf(GeminiFleetModels, 60, 4, 3)
	r := run(t, Config{Name: "llmfleet", Provider: "gemini", Seed: 5, FlexLatencyRange: GeminiFlexRange}, turns)
	t.Logf("gemini, default upstream timeout: %d errors, %d budget misses, routes %v", r.Errors, r.BudgetMisses, r.Routes)
	// (Budget misses are logged, not asserted: which draw of the sync
	// latencies a flex fallback's standard call gets follows the order the
	// goroutines run in, and under -race on a loaded machine one may draw
	// past its reserve.)
	if r.Errors != 0 || r.Routes["flex"] == 0 {
		t.Errorf("errors %d, routes %v: flex calls cut by the 10-minute upstream timeout", r.Errors, r.Routes)
	}
	slow := run(t, Config{Name: "llmfleet", Provider: "openai", Seed: 5, FlexLatencyRange: GeminiFlexRange}, FleetOf(OpenAIFleetModels, 60, 4, 3))
	t.Logf("15-minute flex of a provider without a flex timeout: %d errors", slow.Errors)
	if slow.Errors == 0 {
		t.Errorf("no flex call cut by the 10-minute upstream timeout of a provider stating none: the run no longer shows the bound")
	}
}
