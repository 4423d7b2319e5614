package observe

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/pricing"
)

// memStore is a Store keeping ledger entries in memory; its other methods
// are not implemented.
type memStore struct {
	llmfleet.Store
	mu      sync.Mutex
	entries []llmfleet.LedgerEntry
	readErr error
}

func (s *memStore) AddLedger(_ context.Context, entries []llmfleet.LedgerEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = append(s.entries, entries...)
	return nil
}

func (s *memStore) Ledger(_ context.Context, from, to time.Time) ([]llmfleet.LedgerEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readErr != nil {
		return nil, s.readErr
	}
	var out []llmfleet.LedgerEntry
	for _, e := range s.entries {
		if !e.Time.Before(from) && e.Time.Before(to) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (s *memStore) stored() []llmfleet.LedgerEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llmfleet.LedgerEntry(nil), s.entries...)
}

// fixedClock is a Clock stopped at one time.
type fixedClock struct{ now time.Time }

func (c fixedClock) Now() time.Time { return c.now }

// AfterFunc returns a timer that never fires: time stands still.
func (c fixedClock) AfterFunc(d time.Duration, f func()) llmfleet.Timer { return stillTimer{} }

type stillTimer struct{}

func (stillTimer) Stop() bool { return true }

// testPrice prices model "m" at 1 USD per input token at the sync route
// and half that batched; other models are unpriced.
func testPrice(_, model string, u llmfleet.Usage, route llmfleet.Route) (float64, bool) {
	if model != "m" {
		return 0, false
	}
	usd := float64(u.InputTokens)
	if route == llmfleet.RouteBatch {
		usd /= 2
	}
	return usd, true
}

var testNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// newTestPipeline makes a pipeline over store (which may be nil) on the
// fixed test clock.
func newTestPipeline(t *testing.T, store llmfleet.Store) *Pipeline {
	t.Helper()
	p, err := New(Config{Price: testPrice, Store: store, Clock: fixedClock{testNow}, Provider: "anthropic",
		Stats: func() llmfleet.Stats { return llmfleet.Stats{BatchesSubmitted: 7} }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

func TestPrice(t *testing.T) {
	p := newTestPipeline(t, nil)
	e := p.Price(llmfleet.LedgerEntry{Model: "m", Route: llmfleet.RouteBatch, Usage: llmfleet.Usage{InputTokens: 10}})
	if e.Provider != "anthropic" || !e.Priced || e.CostUSD != 5 || e.OtherRouteUSD != 10 {
		t.Fatalf("priced entry %+v", e)
	}
	if e := p.Price(llmfleet.LedgerEntry{Outcome: "api_error"}); e.Model != "unknown" || !e.Priced || e.Route != llmfleet.RouteSync {
		t.Fatalf("a failed call without tokens: %+v", e)
	}
	if e := p.Price(llmfleet.LedgerEntry{Model: "x", Usage: llmfleet.Usage{InputTokens: 1}}); e.Priced {
		t.Fatalf("an unknown model with tokens priced: %+v", e)
	}
	// An answer whose usage was not read is not $0: it is unpriced.
	if e := p.Price(llmfleet.LedgerEntry{Model: "m", Outcome: "ok"}); e.Priced || e.CostUSD != 0 || e.OtherRouteUSD != 0 {
		t.Fatalf("an answer without usage priced: %+v", e)
	}
}

// TestPriceCanonicalModel checks that a dated model id is priced and
// counted under the model's one name.
func TestPriceCanonicalModel(t *testing.T) {
	table := pricing.Default()
	p, err := New(Config{Price: table.Cost, Canonical: table.Canonical, Provider: "anthropic"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	u := llmfleet.Usage{InputTokens: 1000, OutputTokens: 10}
	dated := p.Price(llmfleet.LedgerEntry{Model: "claude-haiku-4-5-20251001", Usage: u})
	alias := p.Price(llmfleet.LedgerEntry{Model: "claude-haiku-4-5", Usage: u})
	if dated.Model != "claude-haiku-4-5" || alias.Model != "claude-haiku-4-5" || !dated.Priced || dated.CostUSD != alias.CostUSD {
		t.Fatalf("dated %+v, alias %+v: want one model, one price", dated, alias)
	}
}

// TestObserveAndCounted checks that both count an entry, and that only
// Observe records it in the store.
func TestObserveAndCounted(t *testing.T) {
	st := &memStore{}
	p := newTestPipeline(t, st)
	p.Observe(llmfleet.LedgerEntry{Time: testNow, Model: "m", Route: llmfleet.RouteBatch, Outcome: "ok",
		Usage: llmfleet.Usage{InputTokens: 10}})
	p.Counted(llmfleet.LedgerEntry{Time: testNow, Model: "m", Route: llmfleet.RouteSync, Outcome: "ok",
		Usage: llmfleet.Usage{InputTokens: 4}})
	s := p.Summary()
	if s.BatchedCalls != 1 || s.SyncCalls != 1 || s.CostUSD != 9 || s.BatchesSubmitted != 7 {
		t.Fatalf("summary %+v", s)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := st.stored()
	if len(got) != 1 || got[0].Route != llmfleet.RouteBatch || got[0].CostUSD != 5 || got[0].Provider != "anthropic" {
		t.Fatalf("stored %+v, want the observed entry alone, priced", got)
	}
}

// TestRegistryInjected checks that the metrics go to the registry given,
// and that two pipelines do not collide.
func TestRegistryInjected(t *testing.T) {
	reg := prometheus.NewRegistry()
	p, err := New(Config{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	p.UpstreamError("overloaded_error")
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	if !strings.Contains(strings.Join(names, " "), "llmfleet_upstream_errors_total") {
		t.Fatalf("metrics registered: %v", names)
	}
	if _, err := New(Config{}); err != nil {
		t.Fatalf("a second pipeline: %v", err)
	}
}

// TestCloseLogsTotals checks that Close writes the ledger and logs the
// totals.
func TestCloseLogsTotals(t *testing.T) {
	logs := &syncBuffer{}
	st := &memStore{}
	free := func(string, string, llmfleet.Usage, llmfleet.Route) (float64, bool) { return 0, true }
	p, err := New(Config{Store: st, Price: free, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	p.Observe(llmfleet.LedgerEntry{Outcome: "ok", MissUSD: 0.25, Usage: llmfleet.Usage{InputTokens: 1}})
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(st.stored()) != 1 || !strings.Contains(logs.String(), "cost ledger") || !strings.Contains(logs.String(), "sync_calls=1") ||
		!strings.Contains(logs.String(), "routing_miss_usd=0.25 net_saved_usd=-0.25 cache_hit_rate=0") {
		t.Fatalf("stored %d entries; log: %s", len(st.stored()), logs)
	}
	p.Observe(llmfleet.LedgerEntry{RequestID: "lfr_late"})
	if !strings.Contains(logs.String(), "lfr_late") || !strings.Contains(logs.String(), ledger.ErrWriterClosed.Error()) {
		t.Fatalf("an entry after Close not reported: %s", logs)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
