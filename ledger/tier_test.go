package ledger

import (
	"math"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/pricing"
)

// TestCostFollowsTierServed: an entry is priced at the tier the provider
// served, whatever the route asked: a flex call served flex saves half, one
// served standard saves nothing; the summary splits them by route, tier
// and provider.
func TestCostFollowsTierServed(t *testing.T) {
	tab := pricing.Default()
	u := llmfleet.Usage{InputTokens: 1e6, OutputTokens: 1e6}
	full := 1.1 + 4.4 // o4-mini
	for _, c := range []struct {
		name        string
		route       llmfleet.Route
		tier        llmfleet.Tier
		cost, other float64
	}{
		{"flex served flex", llmfleet.RouteFlex, llmfleet.TierFlex, full / 2, full},
		{"flex, no tier reported", llmfleet.RouteFlex, "", full / 2, full},
		{"flex served standard", llmfleet.RouteFlex, llmfleet.TierStandard, full, full / 2},
		{"sync", llmfleet.RouteSync, "", full, full / 2},
		{"batch", llmfleet.RouteBatch, llmfleet.TierBatch, full / 2, full},
		{"sync served priority", llmfleet.RouteSync, llmfleet.TierPriority, full, full / 2},
	} {
		e := Make(tab.Cost, llmfleet.LedgerEntry{Provider: "openai", Model: "o4-mini", Route: c.route, Tier: c.tier, Usage: u, Outcome: "ok"})
		if !e.Priced || math.Abs(e.CostUSD-c.cost) > 1e-9 || math.Abs(e.OtherRouteUSD-c.other) > 1e-9 {
			t.Errorf("%s: cost %v other %v priced %v; want %v, %v", c.name, e.CostUSD, e.OtherRouteUSD, e.Priced, c.cost, c.other)
		}
	}
	entries := []llmfleet.LedgerEntry{
		Make(tab.Cost, llmfleet.LedgerEntry{Provider: "openai", Model: "o4-mini", Route: llmfleet.RouteFlex, Tier: llmfleet.TierFlex, Usage: u, Outcome: "ok"}),
		Make(tab.Cost, llmfleet.LedgerEntry{Provider: "openai", Model: "o4-mini", Route: llmfleet.RouteFlex, Tier: llmfleet.TierStandard, Usage: u, Outcome: "ok"}),
		Make(tab.Cost, llmfleet.LedgerEntry{Provider: "anthropic", Model: "claude-haiku-4-5", Route: llmfleet.RouteBatch, Usage: u, Outcome: "ok"}),
	}
	s := Summarize(entries, time.Time{}, time.Time{})
	if s.FlexCalls != 2 || s.BatchedCalls != 1 || s.SyncCalls != 0 {
		t.Errorf("calls: sync %d flex %d batched %d", s.SyncCalls, s.FlexCalls, s.BatchedCalls)
	}
	if b := s.ByRoute["flex"]; b.Calls != 2 || math.Abs(b.SavedUSD-full/2) > 1e-9 {
		t.Errorf("by_route flex: %+v, want 2 calls saving %v", b, full/2)
	}
	if b := s.ByTier["standard"]; b.Calls != 1 || b.SavedUSD != 0 {
		t.Errorf("by_tier standard: %+v, want 1 call saving nothing", b)
	}
	if b := s.ByTier["flex"]; b.Calls != 1 {
		t.Errorf("by_tier flex: %+v", b)
	}
	if s.ByProvider["openai"].Calls != 2 || s.ByProvider["anthropic"].Calls != 1 {
		t.Errorf("by_provider: %+v", s.ByProvider)
	}
}
