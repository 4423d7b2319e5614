package observe

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/sqlite"
)

// The cache figures of /llmfleet/v1/stats: the running totals, and the
// same read back from a SQLite ledger through a period (?since=), which
// keeps MissUSD, Rewrite and Estimated.
func TestStatsCacheFiguresThroughTheStore(t *testing.T) {
	db := &sqlite.DB{Path: filepath.Join(t.TempDir(), "llmfleet.db")}
	if err := db.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p := newTestPipeline(t, db)
	entry := func(ago time.Duration, route llmfleet.Route, in, read, w5m, w1h int64, miss float64) llmfleet.LedgerEntry {
		e := llmfleet.LedgerEntry{Time: testNow.Add(-ago), Model: "m", Route: route, Outcome: "ok", BudgetMet: true, MissUSD: miss}
		e.Usage.InputTokens, e.Usage.CacheReadInputTokens = in, read
		e.Usage.CacheCreation.Ephemeral5mInputTokens, e.Usage.CacheCreation.Ephemeral1hInputTokens = w5m, w1h
		e.Usage.CacheCreationInputTokens = w5m + w1h
		return e
	}
	// Sync: costs 10, a routing miss of 2 (its saving is 0: net -2).
	p.Observe(entry(time.Hour, llmfleet.RouteSync, 10, 300, 100, 0, 2))
	// Batch: costs 10 of 20, a miss of 3 its saving counts already.
	batched := entry(30*time.Minute, llmfleet.RouteBatch, 20, 0, 0, 1000, 3)
	batched.Rewrite, batched.BatchID = llmfleet.RewriteTTL1h, "msgbatch_1"
	p.Observe(batched)
	// A sync call cut before its usage came: estimated.
	cut := entry(time.Minute, llmfleet.RouteSync, 4, 0, 0, 0, 0)
	cut.Estimated = true
	p.Observe(cut)
	h := p.Handler(http.NotFoundHandler())
	for _, target := range []string{"/llmfleet/v1/stats", "/llmfleet/v1/stats?since=24h"} {
		code, _, body := get(t, h, target)
		var s ledger.Summary
		if err := json.Unmarshal([]byte(body), &s); code != 200 || err != nil {
			t.Fatalf("%s: %d %v %s", target, code, err, body)
		}
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"saved_usd", s.SavedUSD, 10},
			{"routing_miss_usd", s.RoutingMissUSD, 5},
			{"net_saved_usd", s.NetSavedUSD, 8},
			{"cache_hit_rate", s.CacheHitRate, 300.0 / 1400},
			{"by_route sync cache_hit_rate", s.ByRoute["sync"].CacheHitRate, 0.75},
			{"by_route sync routing_miss_usd", s.ByRoute["sync"].RoutingMissUSD, 2},
			{"by_route sync net_saved_usd", s.ByRoute["sync"].NetSavedUSD, -2},
			{"by_route batch cache_hit_rate", s.ByRoute["batch"].CacheHitRate, 0},
			{"by_route batch routing_miss_usd", s.ByRoute["batch"].RoutingMissUSD, 3},
			{"by_route_model batch m net_saved_usd", s.ByRouteModel["batch"]["m"].NetSavedUSD, 10},
			{"by_model m cache_hit_rate", s.ByModel["m"].CacheHitRate, 300.0 / 1400},
			{"estimated", float64(s.Estimated), 1},
			{"rewrites cache_ttl_1h", float64(s.Rewrites[llmfleet.RewriteTTL1h]), 1},
		} {
			if math.Abs(c.got-c.want) > 1e-12 {
				t.Errorf("%s: %s = %v, want %v", target, c.name, c.got, c.want)
			}
		}
	}
	// What the store holds, entry by entry.
	stored, err := db.Ledger(context.Background(), testNow.Add(-24*time.Hour), testNow)
	if err != nil || len(stored) != 3 {
		t.Fatalf("stored: %v %+v", err, stored)
	}
	if stored[0].MissUSD != 2 || stored[1].MissUSD != 3 || stored[1].Rewrite != llmfleet.RewriteTTL1h || !stored[2].Estimated || stored[0].Estimated {
		t.Errorf("stored entries: %+v", stored)
	}
}
