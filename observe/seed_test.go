package observe

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/dashboard"
	"github.com/llmfleet/llmfleet/sqlite"
)

// A pipeline started on a SQLite ledger (serve restarted) seeds the
// dashboard's history from it: the savings series goes on from the whole
// ledger's figures, the traffic and turnarounds of the series' span are
// there again, and what it observes next is counted once.
func TestDashboardHistorySurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "llmfleet.db")
	open := func() *sqlite.DB {
		db := &sqlite.DB{Path: path}
		if err := db.Open(context.Background()); err != nil {
			t.Fatal(err)
		}
		return db
	}
	entry := func(ago time.Duration, route llmfleet.Route, in int64) llmfleet.LedgerEntry {
		return llmfleet.LedgerEntry{Time: testNow.Add(-ago), Model: "m", Route: route, Outcome: "ok", BudgetMet: true,
			Usage: llmfleet.Usage{InputTokens: in}}
	}
	db := open()
	before, err := New(Config{Price: testPrice, Store: db, Clock: fixedClock{testNow}, Provider: "anthropic"})
	if err != nil {
		t.Fatal(err)
	}
	before.Observe(entry(10*time.Hour, llmfleet.RouteBatch, 100)) // before the series' span: paid 50 of 100
	before.Observe(entry(time.Hour, llmfleet.RouteSync, 10))      // paid 10 of 10
	late := entry(30*time.Minute, llmfleet.RouteBatch, 20)        // paid 10 of 20
	late.BatchID, late.Turnaround = "msgbatch_1", 5*time.Minute
	before.Observe(late)
	if err := before.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db = open()
	t.Cleanup(func() { db.Close() }) // after the pipeline's Close
	p := newTestPipeline(t, db)
	p.Observe(entry(time.Minute, llmfleet.RouteSync, 1)) // after the restart
	ts := httptest.NewServer(p.Handler(http.NotFoundHandler()))
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/llmfleet/v1/dashboard")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var snap dashboard.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil {
		t.Fatal(err)
	}
	end := snap.Savings[len(snap.Savings)-1]
	if end.CostUSD != 71 || end.SyncEquivalentUSD != 131 || end.SavedUSD != 60 {
		t.Errorf("savings at the end: %+v, want paid 71 of 131", end)
	}
	var sync, batched int64
	for _, tp := range snap.Traffic {
		sync, batched = sync+tp.SyncCalls, batched+tp.BatchedCalls
	}
	if sync != 2 || batched != 1 {
		t.Errorf("traffic in the span: %d sync, %d batched; want 2 and 1", sync, batched)
	}
	if tp := snap.Turnaround["m"]; len(tp) != 1 || tp[0].Seconds != 300 {
		t.Errorf("turnarounds: %+v", snap.Turnaround)
	}
	if s := p.Summary(); s.SyncCalls != 1 {
		t.Errorf("this process's own count: %+v", s)
	}
}
