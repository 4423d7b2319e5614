package dashboard

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/ledger"
)

// The savings series counts what the ledger's Summary counts: its last
// point is the summary's paid, would-have-paid, saved, routing misses and
// net saving, whatever the routes, rescues and misses of the entries.
func TestHistoryNetSaving(t *testing.T) {
	withMiss := func(e llmfleet.LedgerEntry, miss float64) llmfleet.LedgerEntry {
		e.MissUSD = miss
		return e
	}
	flex := ledgerEntry(5*time.Second, llmfleet.RouteFlex, 0.5, 1)
	late := ledgerEntry(80*time.Second, llmfleet.RouteSync, 0.75, 0.375)
	late.Rescue = llmfleet.RescueLate
	unpriced := withMiss(ledgerEntry(90*time.Second, llmfleet.RouteSync, 0, 0), 0.125)
	unpriced.Priced = false
	for _, c := range []struct {
		name           string
		entries        []llmfleet.LedgerEntry
		miss, netSaved float64
	}{
		{"no misses", []llmfleet.LedgerEntry{ledgerEntry(0, llmfleet.RouteBatch, 1, 2)}, 0, 1},
		{"a flex call saves", []llmfleet.LedgerEntry{flex}, 0, 0.5},
		{"a sync miss is taken off", []llmfleet.LedgerEntry{
			ledgerEntry(0, llmfleet.RouteBatch, 1, 2), withMiss(ledgerEntry(70*time.Second, llmfleet.RouteSync, 1, 0.5), 0.25),
		}, 0.25, 0.75},
		{"a batch miss is in its saving", []llmfleet.LedgerEntry{withMiss(ledgerEntry(0, llmfleet.RouteBatch, 1, 2), 0.25)}, 0.25, 1},
		{"a late answer is lost, its miss with it", []llmfleet.LedgerEntry{ledgerEntry(0, llmfleet.RouteBatch, 1, 2), withMiss(late, 0.25)}, 0.25, 0.25},
		{"an unpriced miss counts only as a miss", []llmfleet.LedgerEntry{ledgerEntry(0, llmfleet.RouteBatch, 1, 2), unpriced}, 0.125, 1},
	} {
		h := &History{}
		for _, e := range c.entries {
			h.Add(e)
		}
		pts := h.Snapshot(t0.Add(3 * time.Minute)).Savings
		last := pts[len(pts)-1]
		s := ledger.Summarize(c.entries, time.Time{}, time.Time{})
		for _, f := range []struct {
			name      string
			got, want float64
		}{
			{"cost_usd", last.CostUSD, s.CostUSD},
			{"sync_equivalent_usd", last.SyncEquivalentUSD, s.SyncEquivalentUSD},
			{"saved_usd", last.SavedUSD, s.SavedUSD},
			{"routing_miss_usd", last.RoutingMissUSD, s.RoutingMissUSD},
			{"net_saved_usd", last.NetSavedUSD, s.NetSavedUSD},
			{"routing_miss_usd by hand", last.RoutingMissUSD, c.miss},
			{"net_saved_usd by hand", last.NetSavedUSD, c.netSaved},
		} {
			if math.Abs(f.got-f.want) > 1e-12 {
				t.Errorf("%s: last point's %s = %v, want %v", c.name, f.name, f.got, f.want)
			}
		}
		if first := pts[0]; first.RoutingMissUSD != 0 || first.NetSavedUSD != 0 {
			t.Errorf("%s: the series starts at %+v", c.name, first)
		}
	}
}

// The data endpoint serves the routing misses and the net saving of each
// savings point.
func TestSnapshotHandlerNetSaving(t *testing.T) {
	h := &History{}
	h.Add(ledgerEntry(0, llmfleet.RouteBatch, 1, 2))
	sync := ledgerEntry(70*time.Second, llmfleet.RouteSync, 1, 0.5)
	sync.MissUSD = 0.25
	h.Add(sync)
	srv := newServer(t, func(context.Context) (Snapshot, error) { return h.Snapshot(t0.Add(110 * time.Second)), nil })
	resp, body := get(t, srv, "GET", "/llmfleet/v1/dashboard")
	var snap struct {
		Savings []map[string]any `json:"savings"`
	}
	if err := json.Unmarshal([]byte(body), &snap); err != nil || resp.StatusCode != 200 || len(snap.Savings) != 3 {
		t.Fatalf("%d %v %s", resp.StatusCode, err, body)
	}
	for i, want := range [][2]float64{{0, 0}, {0, 1}, {0.25, 0.75}} {
		p := snap.Savings[i]
		if p["routing_miss_usd"] != want[0] || p["net_saved_usd"] != want[1] {
			t.Errorf("savings[%d] = %v, want routing_miss_usd %v, net_saved_usd %v", i, p, want[0], want[1])
		}
	}
}

// The page has a place for the net saving, the routing misses and the
// cache hit rates, and its script reads them from v1/stats and
// v1/dashboard under their JSON names (e2e/dashboard.sh checks the figures
// in a browser).
func TestPageShowsCacheFigures(t *testing.T) {
	page, script := mustRead(t, "static/index.html"), mustRead(t, "static/app.js")
	for _, id := range []string{"kpi-net", "kpi-routing", "cache-routes", "cache-models", "legend-netpaid"} {
		if !strings.Contains(page, `id="`+id+`"`) {
			t.Errorf("the page has no #%s", id)
		}
		if !strings.Contains(script, `$("`+id+`")`) {
			t.Errorf("the script does not fill #%s", id)
		}
	}
	for _, field := range []string{"net_saved_usd", "routing_miss_usd", "cache_hit_rate", "by_route_model", "rewrites", "estimated"} {
		if !strings.Contains(script, "."+field) {
			t.Errorf("the script does not read %s", field)
		}
	}
}
