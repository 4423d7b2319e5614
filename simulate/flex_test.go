package simulate

import (
	"testing"

	"github.com/llmfleet/llmfleet/dispatch"
)

// An OpenAI fleet whose models have a flex tier: the engine sends to flex
// what fits its budget, paying batch prices within seconds; preferring
// batch costs more (more requests wait for batches that come too late
// and are rescued) and keeps fewer budgets' latency in seconds; flex
// refusals are retried, and what cannot be is served standard, counted
// as fallbacks; no budget is broken either way.
func TestFlexRoute(t *testing.T) {
	turns := FleetOf(OpenAIFleetModels, 60, 4, 3)
	flex := run(t, Config{Name: "llmfleet", Provider: "openai", Seed: 5}, turns)
	batch := run(t, Config{Name: "prefer-batch", Provider: "openai", Seed: 5, Policy: dispatch.Policy{PreferBatch: true}}, turns)
	t.Logf("flex-preferred: %+v", flex)
	t.Logf("batch-preferred: %+v", batch)
	if flex.Routes["flex"] == 0 || flex.Routes["flex"] <= batch.Routes["flex"] {
		t.Errorf("flex routes: flex-preferred %d, batch-preferred %d", flex.Routes["flex"], batch.Routes["flex"])
	}
	if batch.Routes["batch"] <= flex.Routes["batch"] {
		t.Errorf("batch routes: flex-preferred %d, batch-preferred %d", flex.Routes["batch"], batch.Routes["batch"])
	}
	if flex.SavedUSD <= 0 || flex.SavedUSD < batch.SavedUSD {
		t.Errorf("saved: flex-preferred %v, batch-preferred %v", flex.SavedUSD, batch.SavedUSD)
	}
	if flex.BudgetMisses != 0 || batch.BudgetMisses != 0 {
		t.Errorf("budget misses: %d, %d", flex.BudgetMisses, batch.BudgetMisses)
	}
	if flex.SavedOfBound <= 0 || flex.SavedOfBound > 1 {
		t.Errorf("saved of bound %v", flex.SavedOfBound)
	}

	refused := run(t, Config{Name: "llmfleet", Provider: "openai", Seed: 5, FlexRefusal: 0.6}, turns)
	t.Logf("60%% refused: %+v", refused)
	if refused.BudgetMisses != 0 || refused.Errors != 0 {
		t.Errorf("with refusals: %d misses, %d errors", refused.BudgetMisses, refused.Errors)
	}
	if refused.FlexFallbacks == 0 || refused.CostUSD <= flex.CostUSD {
		t.Errorf("with refusals: %d fallbacks, cost %v (without %v)", refused.FlexFallbacks, refused.CostUSD, flex.CostUSD)
	}

	// An Anthropic fleet knows no flex tier.
	anth := run(t, Config{Name: "llmfleet", Seed: 5}, Fleet(20, 3, 3))
	if anth.Routes["flex"] != 0 {
		t.Errorf("anthropic requests went flex: %v", anth.Routes)
	}
}
