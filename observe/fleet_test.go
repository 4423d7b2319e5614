package observe

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/ledger"
)

// memLedger is a ledger.Reader over entries in memory that records the
// ranges it was asked for.
type memLedger struct {
	entries []llmfleet.LedgerEntry
	reads   [][2]time.Time
}

func (m *memLedger) Ledger(_ context.Context, from, to time.Time) ([]llmfleet.LedgerEntry, error) {
	m.reads = append(m.reads, [2]time.Time{from, to})
	var out []llmfleet.LedgerEntry
	for _, e := range m.entries {
		if !e.Time.Before(from) && e.Time.Before(to) {
			out = append(out, e)
		}
	}
	return out, nil
}

// The fleet's totals match a summary of the whole ledger, while each
// request reads only what is younger than fleetSettle (and what settled
// since the last one).
func TestFleetTotals(t *testing.T) {
	since := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	m := &memLedger{}
	entry := func(at time.Time, i int) llmfleet.LedgerEntry {
		e := llmfleet.LedgerEntry{Time: at, Provider: "anthropic", Model: "m", Route: llmfleet.RouteBatch, Outcome: "ok",
			CostUSD: float64(i), OtherRouteUSD: float64(2 * i), Priced: true, BatchID: fmt.Sprintf("b%d", i%3), RequestID: fmt.Sprint(i),
			MissUSD: float64(i) / 8}
		if i%4 == 0 { // a sync call, whose routing miss is taken off the net saving
			e.Route, e.BatchID = llmfleet.RouteSync, ""
		}
		return e
	}
	for i := range 10 {
		m.entries = append(m.entries, entry(since.Add(time.Duration(i)*time.Hour), i))
	}
	var f fleetTotals
	check := func(now time.Time) {
		t.Helper()
		m.reads = nil
		got, err := f.summary(t.Context(), m, since, now)
		if err != nil {
			t.Fatal(err)
		}
		want := ledger.Summarize(m.entries, since, now.Add(time.Hour))
		if got.BatchedCalls != want.BatchedCalls || got.CostUSD != want.CostUSD || got.SyncEquivalentUSD != want.SyncEquivalentUSD ||
			got.BatchesSubmitted != want.BatchesSubmitted || got.RoutingMissUSD != want.RoutingMissUSD || got.NetSavedUSD != want.NetSavedUSD {
			t.Errorf("at %v: calls %d cost %v sync %v batches %d misses %v net %v; want %d %v %v %d %v %v", now, got.BatchedCalls,
				got.CostUSD, got.SyncEquivalentUSD, got.BatchesSubmitted, got.RoutingMissUSD, got.NetSavedUSD, want.BatchedCalls,
				want.CostUSD, want.SyncEquivalentUSD, want.BatchesSubmitted, want.RoutingMissUSD, want.NetSavedUSD)
		}
	}
	now := since.Add(12 * time.Hour)
	check(now)
	// Entries come in: one just now, one within the settling minute.
	m.entries = append(m.entries, entry(now.Add(-30*time.Second), 10), entry(now.Add(time.Second), 11))
	now = now.Add(2 * time.Second)
	check(now)
	if len(m.reads) != 2 || m.reads[0][0].Before(since.Add(12*time.Hour-fleetSettle)) {
		t.Errorf("the second look read %v: want only what settled since the first and the last minute", m.reads)
	}
	now = now.Add(10 * time.Minute)
	m.entries = append(m.entries, entry(now.Add(-time.Second), 12))
	check(now)
	// A fleet that starts later counts from its start.
	since = since.Add(5 * time.Hour)
	check(now)
}
