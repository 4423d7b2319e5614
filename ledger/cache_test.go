package ledger

import (
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

func TestCacheHitRate(t *testing.T) {
	for _, c := range []struct {
		name string
		tok  Tokens
		want float64
	}{
		{"nothing cacheable", Tokens{Input: 1000, Output: 50}, 0},
		{"reads only", Tokens{Input: 10, CacheRead: 4000}, 1},
		{"writes only", Tokens{CacheWrite5m: 300, CacheWrite1h: 700}, 0},
		{"three of four read", Tokens{Input: 99999, CacheRead: 3000, CacheWrite5m: 600, CacheWrite1h: 400}, 0.75},
		{"input does not count", Tokens{Input: 1e6, CacheRead: 1, CacheWrite1h: 1}, 0.5},
	} {
		if got := c.tok.CacheHitRate(); !near(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// cacheEntry is a priced entry of model "m" with cache reads and writes,
// its costs and its routing miss.
func cacheEntry(route llmfleet.Route, model string, read, w5m, w1h int64, cost, other, miss float64) llmfleet.LedgerEntry {
	return llmfleet.LedgerEntry{Provider: "anthropic", Model: model, Route: route, Outcome: "ok", BudgetMet: true,
		Usage: use(100, 10, w5m, w1h, read), CostUSD: cost, OtherRouteUSD: other, Priced: true, MissUSD: miss}
}

func TestMissNotInSaving(t *testing.T) {
	late := cacheEntry(llmfleet.RouteSync, "m", 0, 100, 0, 0.1, 0.05, 0.01)
	late.Rescue = llmfleet.RescueLate
	lateBatch := cacheEntry(llmfleet.RouteBatch, "m", 0, 100, 0, 0.05, 0.1, 0.01)
	lateBatch.Rescue = llmfleet.RescueLate
	standardFlex := cacheEntry(llmfleet.RouteFlex, "m", 0, 100, 0, 0.1, 0.05, 0.01)
	standardFlex.Tier = llmfleet.TierStandard
	unpriced := cacheEntry(llmfleet.RouteSync, "x", 0, 100, 0, 0, 0, 0.01)
	unpriced.Priced = false
	rescue := cacheEntry(llmfleet.RouteSync, "m", 0, 100, 0, 0.1, 0.05, 0.02)
	rescue.Rescue = llmfleet.RescueSync
	for _, c := range []struct {
		name      string
		e         llmfleet.LedgerEntry
		miss, net float64
	}{
		{"sync: its miss is not in its saving", cacheEntry(llmfleet.RouteSync, "m", 0, 100, 0, 0.1, 0.05, 0.02), 0.02, -0.02},
		{"sync without a miss", cacheEntry(llmfleet.RouteSync, "m", 100, 0, 0, 0.1, 0.05, 0), 0, 0},
		{"rescue's sync call", rescue, 0.02, -0.02},
		{"flex served standard", standardFlex, 0.01, -0.01},
		{"batch: already net", cacheEntry(llmfleet.RouteBatch, "m", 0, 100, 0, 0.05, 0.08, 0.01), 0, 0.03},
		{"flex served flex: already net", cacheEntry(llmfleet.RouteFlex, "m", 0, 100, 0, 0.05, 0.08, 0.01), 0, 0.03},
		{"late rescue answer: its cost is lost already", late, 0, -0.1},
		{"late batch answer", lateBatch, 0, -0.05},
		{"unpriced", unpriced, 0, 0},
	} {
		if got := MissNotInSaving(c.e); !near(got, c.miss) {
			t.Errorf("%s: MissNotInSaving %v, want %v", c.name, got, c.miss)
		}
		if got := NetSaving(c.e); !near(got, c.net) {
			t.Errorf("%s: NetSaving %v, want %v", c.name, got, c.net)
		}
	}
}

// cacheWant is what a summary must show of the cache.
type cacheWant struct {
	hitRate, routingMiss, saved, netSaved float64
	byRoute                               map[string][3]float64 // hit rate, routing miss, net saved
	rewrites                              map[string]int64
	estimated                             int64
}

func TestSummaryCacheFigures(t *testing.T) {
	syncMiss := cacheEntry(llmfleet.RouteSync, "sonnet", 0, 1000, 0, 0.02, 0.01, 0.004)
	late := cacheEntry(llmfleet.RouteBatch, "sonnet", 0, 0, 1000, 0.03, 0.06, 0.002)
	late.Rescue = llmfleet.RescueLate
	unpriced := cacheEntry(llmfleet.RouteSync, "mystery", 500, 500, 0, 0, 0, 0.001)
	unpriced.Priced = false
	rewritten := cacheEntry(llmfleet.RouteBatch, "sonnet", 0, 0, 2000, 0.05, 0.08, 0)
	rewritten.Rewrite = llmfleet.RewriteTTL1h
	estimated := cacheEntry(llmfleet.RouteSync, "haiku", 0, 0, 0, 0.01, 0.005, 0)
	estimated.Estimated = true
	for _, c := range []struct {
		name    string
		entries []llmfleet.LedgerEntry
		want    cacheWant
	}{
		{"empty", nil, cacheWant{byRoute: map[string][3]float64{}, rewrites: map[string]int64{}}},
		{"no cache", []llmfleet.LedgerEntry{cacheEntry(llmfleet.RouteBatch, "sonnet", 0, 0, 0, 0.05, 0.1, 0)},
			cacheWant{saved: 0.05, netSaved: 0.05, byRoute: map[string][3]float64{"batch": {0, 0, 0.05}}, rewrites: map[string]int64{}}},
		{"hit rates by route", []llmfleet.LedgerEntry{
			cacheEntry(llmfleet.RouteSync, "sonnet", 900, 100, 0, 0.01, 0.005, 0),
			cacheEntry(llmfleet.RouteBatch, "sonnet", 0, 0, 1000, 0.05, 0.1, 0),
			cacheEntry(llmfleet.RouteFlex, "haiku", 500, 0, 500, 0.02, 0.04, 0),
		}, cacheWant{hitRate: 1400.0 / 3000, saved: 0.07, netSaved: 0.07, rewrites: map[string]int64{},
			byRoute: map[string][3]float64{"sync": {0.9, 0, 0}, "batch": {0, 0, 0.05}, "flex": {0.5, 0, 0.02}}}},
		{"a sync miss is taken off, a batch miss is not", []llmfleet.LedgerEntry{
			syncMiss, cacheEntry(llmfleet.RouteBatch, "sonnet", 0, 0, 1000, 0.05, 0.08, 0.01),
		}, cacheWant{routingMiss: 0.014, saved: 0.03, netSaved: 0.026, rewrites: map[string]int64{},
			byRoute: map[string][3]float64{"sync": {0, 0.004, -0.004}, "batch": {0, 0.01, 0.03}}}},
		{"late and unpriced misses count, not again", []llmfleet.LedgerEntry{late, unpriced},
			cacheWant{hitRate: 500.0 / 2000, routingMiss: 0.003, saved: -0.03, netSaved: -0.03, rewrites: map[string]int64{},
				byRoute: map[string][3]float64{"batch": {0, 0.002, -0.03}, "sync": {0.5, 0.001, 0}}}},
		{"rewrites and estimates", []llmfleet.LedgerEntry{rewritten, rewritten, estimated},
			cacheWant{saved: 0.06, netSaved: 0.06, rewrites: map[string]int64{llmfleet.RewriteTTL1h: 2}, estimated: 1,
				byRoute: map[string][3]float64{"batch": {0, 0, 0.06}, "sync": {0, 0, 0}}}},
	} {
		s := Summarize(c.entries, time.Time{}, time.Time{})
		checkCache(t, c.name, s, c.want)
		var tot Totals
		tot.Add(c.entries...)
		checkCache(t, c.name+" (Totals)", tot.Summary(), c.want)
	}
}

func checkCache(t *testing.T, name string, s Summary, w cacheWant) {
	t.Helper()
	if !near(s.CacheHitRate, w.hitRate) || !near(s.RoutingMissUSD, w.routingMiss) || !near(s.SavedUSD, w.saved) ||
		!near(s.NetSavedUSD, w.netSaved) || s.Estimated != w.estimated || !maps.Equal(s.Rewrites, w.rewrites) {
		t.Errorf("%s: hit rate %v, routing miss %v, saved %v, net %v, rewrites %v, estimated %d; want %+v", name,
			s.CacheHitRate, s.RoutingMissUSD, s.SavedUSD, s.NetSavedUSD, s.Rewrites, s.Estimated, w)
	}
	if len(s.ByRoute) != len(w.byRoute) {
		t.Errorf("%s: routes %v, want %v", name, s.ByRoute, w.byRoute)
	}
	for route, f := range w.byRoute {
		b := s.ByRoute[route]
		if !near(b.CacheHitRate, f[0]) || !near(b.RoutingMissUSD, f[1]) || !near(b.NetSavedUSD, f[2]) {
			t.Errorf("%s: route %s: hit rate %v, routing miss %v, net %v; want %v", name, route,
				b.CacheHitRate, b.RoutingMissUSD, b.NetSavedUSD, f)
		}
		// The route's models add up to the route.
		var sum Breakdown
		for _, m := range s.ByRouteModel[route] {
			sum.Calls += m.Calls
			sum.Tokens.add(m.Tokens)
			sum.RoutingMissUSD += m.RoutingMissUSD
			sum.NetSavedUSD += m.NetSavedUSD
		}
		if sum.Calls != b.Calls || sum.Tokens != b.Tokens || !near(sum.RoutingMissUSD, b.RoutingMissUSD) || !near(sum.NetSavedUSD, b.NetSavedUSD) {
			t.Errorf("%s: route %s by model adds up to %+v, not %+v", name, route, sum, b)
		}
	}
	if len(s.ByRouteModel) != len(s.ByRoute) {
		t.Errorf("%s: by_route_model has %d routes, by_route %d", name, len(s.ByRouteModel), len(s.ByRoute))
	}
}

func TestSummaryCacheByModel(t *testing.T) {
	s := Summarize([]llmfleet.LedgerEntry{
		cacheEntry(llmfleet.RouteSync, "sonnet", 3000, 1000, 0, 0.01, 0.005, 0.002),
		cacheEntry(llmfleet.RouteBatch, "sonnet", 0, 0, 4000, 0.05, 0.1, 0.003),
		cacheEntry(llmfleet.RouteBatch, "haiku", 1000, 0, 0, 0.01, 0.02, 0),
	}, time.Time{}, time.Time{})
	for _, c := range []struct {
		name              string
		b                 Breakdown
		hitRate, miss, ns float64
	}{
		{"sonnet", s.ByModel["sonnet"], 3000.0 / 8000, 0.005, 0.05 - 0.002},
		{"haiku", s.ByModel["haiku"], 1, 0, 0.01},
		{"batch sonnet", s.ByRouteModel["batch"]["sonnet"], 0, 0.003, 0.05},
		{"sync sonnet", s.ByRouteModel["sync"]["sonnet"], 0.75, 0.002, -0.002},
		{"batch haiku", s.ByRouteModel["batch"]["haiku"], 1, 0, 0.01},
	} {
		if !near(c.b.CacheHitRate, c.hitRate) || !near(c.b.RoutingMissUSD, c.miss) || !near(c.b.NetSavedUSD, c.ns) {
			t.Errorf("%s: hit rate %v, routing miss %v, net saved %v; want %v, %v, %v", c.name,
				c.b.CacheHitRate, c.b.RoutingMissUSD, c.b.NetSavedUSD, c.hitRate, c.miss, c.ns)
		}
	}
	if _, ok := s.ByRouteModel["sync"]["haiku"]; ok {
		t.Error("a model without traffic on a route has a row there")
	}
}

// The new figures are in the JSON under their documented names, and a
// summary read back from JSON (llmfleet stats --url) keeps them.
func TestSummaryCacheJSON(t *testing.T) {
	e := cacheEntry(llmfleet.RouteSync, "sonnet", 3000, 1000, 0, 0.01, 0.005, 0.002)
	e.Estimated, e.Rewrite = true, llmfleet.RewriteTTL1h
	s := Summarize([]llmfleet.LedgerEntry{e}, time.Time{}, time.Time{})
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	sonnet := m["by_route_model"].(map[string]any)["sync"].(map[string]any)["sonnet"].(map[string]any)
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"cache_hit_rate", m["cache_hit_rate"], 0.75},
		{"routing_miss_usd", m["routing_miss_usd"], 0.002},
		{"net_saved_usd", m["net_saved_usd"], -0.002},
		{"rewrites", m["rewrites"].(map[string]any)["cache_ttl_1h"], 1.0},
		{"estimated", m["estimated"], 1.0},
		{"by_route.sync.cache_hit_rate", m["by_route"].(map[string]any)["sync"].(map[string]any)["cache_hit_rate"], 0.75},
		{"by_model.sonnet.routing_miss_usd", m["by_model"].(map[string]any)["sonnet"].(map[string]any)["routing_miss_usd"], 0.002},
		{"by_route_model.sync.sonnet.net_saved_usd", sonnet["net_saved_usd"], -0.002},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	var back Summary
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.NetSavedUSD != s.NetSavedUSD || back.ByRouteModel["sync"]["sonnet"].NetSavedUSD != -0.002 || back.Estimated != 1 {
		t.Errorf("read back: %+v", back)
	}
	empty, _ := json.Marshal(Summarize(nil, time.Time{}, time.Time{}))
	if err := json.Unmarshal(empty, &m); err != nil || m["rewrites"] == nil || m["by_route_model"] == nil {
		t.Errorf("empty summary: %s", empty)
	}
}
