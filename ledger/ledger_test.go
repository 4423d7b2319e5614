package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// testPrice prices two models by hand-written rates in USD per million
// tokens (input, output, 5m write, 1h write, read), halved on the batch
// route; any other model is unpriced.
func testPrice(provider, model string, u llmfleet.Usage, route llmfleet.Route) (float64, bool) {
	rates := map[string][5]float64{
		"sonnet": {3, 15, 3.75, 6, 0.3},
		"haiku":  {1, 5, 1.25, 2, 0.1},
	}
	r, ok := rates[model]
	if !ok || provider != "anthropic" {
		return 0, false
	}
	w5m, w1h := u.CacheWrites()
	micro := float64(u.InputTokens)*r[0] + float64(u.OutputTokens)*r[1] + float64(w5m)*r[2] +
		float64(w1h)*r[3] + float64(u.CacheReadInputTokens)*r[4]
	if route == llmfleet.RouteBatch {
		micro /= 2
	}
	return micro / 1e6, true
}

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func use(in, out, w5m, w1h, read int64) llmfleet.Usage {
	var u llmfleet.Usage
	u.InputTokens, u.OutputTokens, u.CacheReadInputTokens = in, out, read
	u.CacheCreation.Ephemeral5mInputTokens, u.CacheCreation.Ephemeral1hInputTokens = w5m, w1h
	u.CacheCreationInputTokens = w5m + w1h
	return u
}

// workload is a known mix of traffic; its figures are computed by hand in
// TestSummarizeWorkload.
func workload() []llmfleet.LedgerEntry {
	totalOnly := use(10, 10, 0, 0, 1000)
	totalOnly.CacheCreationInputTokens = 4000 // no split: 5-minute writes
	raw := []llmfleet.LedgerEntry{
		// 1. sync sonnet: 1000×3 + 500×15 = 10500 µ$.
		{Model: "sonnet", Route: llmfleet.RouteSync, Outcome: "ok", Usage: use(1000, 500, 0, 0, 0), BudgetMet: true},
		// 2. batched sonnet: 2000×3 + 1000×15 + 10000×6 + 20000×0.3 = 87000 µ$ at sync.
		{Model: "sonnet", Route: llmfleet.RouteBatch, Outcome: "ok", Usage: use(2000, 1000, 0, 10000, 20000),
			Budget: 10 * time.Minute, BudgetMet: true},
		// 3. batched haiku, budget missed: 100000×1 + 20000×5 = 200000 µ$ at sync.
		{Model: "haiku", Route: llmfleet.RouteBatch, Outcome: "ok", Usage: use(100000, 20000, 0, 0, 0),
			Budget: time.Hour, Latency: 2 * time.Hour},
		// 4. sync, model missing from the price table.
		{Model: "mystery-1", Route: llmfleet.RouteSync, Outcome: "ok", Usage: use(500, 50, 0, 0, 0), BudgetMet: true},
		// 5. batched sonnet that ran out of budget before an answer.
		{Model: "sonnet", Route: llmfleet.RouteBatch, Outcome: "budget_exceeded", Budget: 30 * time.Second},
		// 6. sync haiku: 10×1 + 10×5 + 4000×1.25 + 1000×0.1 = 5160 µ$.
		{Model: "haiku", Route: llmfleet.RouteSync, Outcome: "ok", Usage: totalOnly, BudgetMet: true},
	}
	out := make([]llmfleet.LedgerEntry, len(raw))
	for i, e := range raw {
		e.Provider = "anthropic"
		e.Time = t0.Add(time.Duration(i) * time.Minute)
		out[i] = Make(testPrice, e)
	}
	return out
}

func near(got, want float64) bool { return math.Abs(got-want) < 1e-9 }

func cents(v float64) string { return fmt.Sprintf("%.2f", v) }

func TestMake(t *testing.T) {
	es := workload()
	for i, want := range []struct {
		cost, other float64
		priced      bool
	}{
		{0.0105, 0.00525, true},
		{0.0435, 0.087, true},
		{0.1, 0.2, true},
		{0, 0, false},
		{0, 0, true},
		{0.00516, 0.00258, true},
	} {
		e := es[i]
		if !near(e.CostUSD, want.cost) || !near(e.OtherRouteUSD, want.other) || e.Priced != want.priced {
			t.Errorf("entry %d: cost %v other %v priced %v; want %+v", i+1, e.CostUSD, e.OtherRouteUSD, e.Priced, want)
		}
	}
	e := Make(nil, llmfleet.LedgerEntry{Model: "sonnet", CostUSD: 5, Priced: true})
	if e.Priced || e.CostUSD != 0 || e.Route != llmfleet.RouteSync {
		t.Errorf("nil price: %+v", e)
	}
}

func TestSummarizeWorkload(t *testing.T) {
	s := Summarize(workload(), time.Time{}, time.Time{})
	s.BatchesSubmitted = 2
	// Paid: 0.0105 + 0.0435 + 0.10 + 0.00516 = 0.15916.
	// At sync: 0.0105 + 0.087 + 0.20 + 0.00516 = 0.30266.
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"cost", s.CostUSD, 0.15916},
		{"sync equivalent", s.SyncEquivalentUSD, 0.30266},
		{"saved", s.SavedUSD, 0.1435},
		{"saved percent", s.SavedPercent, 100 * 0.1435 / 0.30266},
	} {
		if !near(c.got, c.want) || cents(c.got) != cents(c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if s.SyncCalls != 3 || s.BatchedCalls != 3 || s.Errors != 1 || s.BudgetMisses != 2 || s.UnpricedRequests != 1 {
		t.Errorf("counts: %+v", s)
	}
	if want := (Tokens{Input: 500, Output: 50}); s.UnpricedTokens != want {
		t.Errorf("unpriced tokens %+v, want %+v", s.UnpricedTokens, want)
	}
	if want := (Tokens{Input: 103510, Output: 21560, CacheWrite5m: 4000, CacheWrite1h: 10000, CacheRead: 21000}); s.Tokens != want {
		t.Errorf("tokens %+v, want %+v", s.Tokens, want)
	}
	check := func(what string, b Breakdown, calls, errs, misses, unpriced int64, cost, syncEq float64) {
		t.Helper()
		if b.Calls != calls || b.Errors != errs || b.BudgetMisses != misses || b.UnpricedRequests != unpriced ||
			!near(b.CostUSD, cost) || !near(b.SyncEquivalentUSD, syncEq) || !near(b.SavedUSD, syncEq-cost) {
			t.Errorf("%s: %+v; want calls %d errors %d misses %d unpriced %d cost %v at sync %v",
				what, b, calls, errs, misses, unpriced, cost, syncEq)
		}
	}
	check("sonnet", s.ByModel["sonnet"], 3, 1, 1, 0, 0.054, 0.0975)
	check("haiku", s.ByModel["haiku"], 2, 0, 1, 0, 0.10516, 0.20516)
	check("mystery-1", s.ByModel["mystery-1"], 1, 0, 0, 1, 0, 0)
	check("sync", s.ByRoute["sync"], 3, 0, 0, 1, 0.01566, 0.01566)
	check("batch", s.ByRoute["batch"], 3, 1, 2, 0, 0.1435, 0.287)
	if b := s.ByModel["sonnet"]; b.SyncCalls != 1 || b.BatchedCalls != 2 {
		t.Errorf("sonnet split: %+v", b)
	}
	if b := s.ByRoute["batch"]; b.SyncCalls != 0 || b.BatchedCalls != 3 {
		t.Errorf("batch route split: %+v", b)
	}
	if len(s.ByModel) != 3 || len(s.ByRoute) != 2 {
		t.Errorf("breakdowns: %v %v", s.ByModel, s.ByRoute)
	}
	if w := (Tokens{Input: 2000 + 100000, Output: 1000 + 20000, CacheWrite1h: 10000, CacheRead: 20000}); s.ByRoute["batch"].Tokens != w {
		t.Errorf("batch tokens %+v, want %+v", s.ByRoute["batch"].Tokens, w)
	}
	if len(s.RecentBudgetMisses) != 2 || s.RecentBudgetMisses[0].Outcome != "budget_exceeded" || s.RecentBudgetMisses[1].Model != "haiku" {
		t.Errorf("recent misses, newest first: %+v", s.RecentBudgetMisses)
	}
}

func TestSummarizePeriod(t *testing.T) {
	// Entries are a minute apart from t0: [t0+1m, t0+3m) holds entries 2 and 3.
	from, to := t0.Add(time.Minute), t0.Add(3*time.Minute)
	s := Summarize(workload(), from, to)
	if s.BatchedCalls != 2 || s.SyncCalls != 0 || !near(s.CostUSD, 0.1435) || !s.From.Equal(from) || !s.To.Equal(to) {
		t.Errorf("period: %+v", s)
	}
	s = Summarize(workload(), t0.Add(5*time.Minute), time.Time{})
	if s.SyncCalls != 1 || !near(s.CostUSD, 0.00516) {
		t.Errorf("open end: %+v", s)
	}
	s = Summarize(nil, time.Time{}, time.Time{})
	if s.ByModel == nil || s.ByRoute == nil || s.RecentBudgetMisses == nil {
		t.Errorf("empty summary has nil collections: %+v", s)
	}
}

func TestSummaryJSON(t *testing.T) {
	s := Summarize(workload(), time.Time{}, time.Time{})
	s.BatchesSubmitted = 7
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"sync_calls", "batched_calls", "batches_submitted", "cost_usd", "sync_equivalent_usd",
		"saved_usd", "saved_percent", "budget_misses", "unpriced_requests", "unpriced_tokens", "tokens", "by_model",
		"by_route", "recent_budget_misses", "errors"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %q in %s", k, data)
		}
	}
	if _, ok := m["from"]; ok {
		t.Errorf("zero from encoded: %s", data)
	}
	if m["batches_submitted"] != 7.0 || m["by_route"].(map[string]any)["batch"].(map[string]any)["calls"] != 3.0 {
		t.Errorf("values: %s", data)
	}
	if tok := m["tokens"].(map[string]any); tok["cache_write_1h"] != 10000.0 || tok["cache_write_5m"] != 4000.0 {
		t.Errorf("tokens: %v", tok)
	}
}

func TestTotalsMatchesSummarize(t *testing.T) {
	var tot Totals
	for _, e := range workload() {
		tot.Add(e)
	}
	got, want := tot.Summary(), Summarize(workload(), time.Time{}, time.Time{})
	a, _ := json.Marshal(got)
	b, _ := json.Marshal(want)
	if !bytes.Equal(a, b) {
		t.Errorf("Totals:\n%s\nSummarize:\n%s", a, b)
	}
	// A summary is a snapshot: later adds do not change it.
	before := got.ByModel["sonnet"].Calls
	tot.Add(workload()[0])
	if got.ByModel["sonnet"].Calls != before || tot.Summary().ByModel["sonnet"].Calls != before+1 {
		t.Error("summary shares memory with the totals")
	}
}

func TestTotalsRecentMisses(t *testing.T) {
	tot := Totals{RecentMisses: 3}
	for i := range 10 {
		tot.Add(llmfleet.LedgerEntry{Model: fmt.Sprint(i), Time: t0.Add(time.Duration(i) * time.Second),
			Outcome: "ok", Budget: time.Second, Latency: 2 * time.Second})
	}
	s := tot.Summary()
	var got []string
	for _, e := range s.RecentBudgetMisses {
		got = append(got, e.Model)
	}
	if strings.Join(got, ",") != "9,8,7" || s.BudgetMisses != 10 {
		t.Errorf("recent misses %v (of %d), want 9,8,7", got, s.BudgetMisses)
	}
}

func TestTotalsConcurrent(t *testing.T) {
	var tot Totals
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25 {
				tot.Add(workload()...)
				_ = tot.Summary()
			}
		})
	}
	wg.Wait()
	s := tot.Summary()
	if s.SyncCalls != 300 || s.BatchedCalls != 300 || cents(s.SavedUSD) != cents(100*0.1435) {
		t.Errorf("after 100 workloads: %d sync, %d batched, saved %v", s.SyncCalls, s.BatchedCalls, s.SavedUSD)
	}
}

func TestCallEntry(t *testing.T) {
	resp := &llmfleet.Response{Route: llmfleet.RouteBatch, Model: "sonnet", RequestID: "lfr_1",
		Usage: use(10, 20, 0, 0, 0), Queued: 3 * time.Second, BatchTurnaround: 40 * time.Second}
	e := Call{Provider: "anthropic", Model: "claude-x", Route: llmfleet.RouteSync, Budget: time.Minute,
		Start: t0, End: t0.Add(50 * time.Second), Response: resp}.Entry()
	if e.RequestID != "lfr_1" || e.Model != "sonnet" || e.Route != llmfleet.RouteBatch || e.Outcome != "ok" ||
		e.Latency != 50*time.Second || e.Queued != 3*time.Second || e.Turnaround != 40*time.Second ||
		!e.BudgetMet || !e.Time.Equal(t0.Add(50*time.Second)) || e.Usage.OutputTokens != 20 {
		t.Errorf("entry: %+v", e)
	}
	e = Call{Provider: "anthropic", Model: "sonnet", Route: llmfleet.RouteBatch, Budget: time.Minute,
		Start: t0, End: t0.Add(70 * time.Second), Response: resp}.Entry()
	if e.BudgetMet {
		t.Error("late answer met its budget")
	}
	e = Call{Model: "sonnet", Route: llmfleet.RouteBatch, Budget: time.Minute, Start: t0, End: t0.Add(time.Second),
		Err: fmt.Errorf("wait: %w", llmfleet.ErrBudgetExceeded)}.Entry()
	if e.BudgetMet || e.Outcome != "budget_exceeded" || e.Route != llmfleet.RouteBatch || !IsBudgetMiss(e) {
		t.Errorf("budget exceeded: %+v", e)
	}
	e = Call{Model: "sonnet", Start: t0, End: t0.Add(time.Hour)}.Entry()
	if !e.BudgetMet || e.Route != llmfleet.RouteSync || IsBudgetMiss(e) {
		t.Errorf("no budget: %+v", e)
	}
}

func TestOutcome(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{&llmfleet.Error{StatusCode: 529, Type: "overloaded_error"}, "overloaded_error"},
		{fmt.Errorf("x: %w", &llmfleet.Error{StatusCode: 502}), "http_502"},
		{llmfleet.ErrBatchExpired, "expired"},
		{llmfleet.ErrBatchCanceled, "canceled"},
		{llmfleet.ErrResultMissing, "result_missing"},
		{llmfleet.ErrClosed, "closed"},
		{llmfleet.ErrUnknownProvider, "unknown_provider"},
		{context.Canceled, "caller_canceled"},
		{context.DeadlineExceeded, "deadline_exceeded"},
		{errors.New("boom"), "error"},
	} {
		if got := Outcome(c.err); got != c.want {
			t.Errorf("Outcome(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
