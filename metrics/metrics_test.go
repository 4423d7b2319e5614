package metrics

import (
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func newMetrics(t *testing.T) (*Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

func entry(route llmfleet.Route, model, outcome string, in, out, w5m, w1h, read int64, cost, other float64) llmfleet.LedgerEntry {
	e := llmfleet.LedgerEntry{Provider: "anthropic", Model: model, Route: route, Outcome: outcome,
		CostUSD: cost, OtherRouteUSD: other, Priced: true, BudgetMet: true}
	e.Usage.InputTokens, e.Usage.OutputTokens, e.Usage.CacheReadInputTokens = in, out, read
	e.Usage.CacheCreation.Ephemeral5mInputTokens, e.Usage.CacheCreation.Ephemeral1hInputTokens = w5m, w1h
	e.Usage.CacheCreationInputTokens = w5m + w1h
	return e
}

func TestObserve(t *testing.T) {
	m, _ := newMetrics(t)
	m.Observe(entry(llmfleet.RouteSync, "claude-sonnet-4-6", "ok", 1000, 500, 0, 0, 0, 0.0105, 0.00525))
	m.Observe(entry(llmfleet.RouteBatch, "claude-sonnet-4-6", "ok", 2000, 1000, 0, 10000, 20000, 0.0435, 0.087))
	m.Observe(entry(llmfleet.RouteBatch, "claude-sonnet-4-6", "ok", 10, 10, 300, 0, 0, 0.001, 0.002))
	miss := entry(llmfleet.RouteBatch, "claude-haiku-4-5", "budget_exceeded", 0, 0, 0, 0, 0, 0, 0)
	miss.Budget, miss.BudgetMet = time.Minute, false
	m.Observe(miss)
	unpriced := entry("", "mystery", "ok", 7, 3, 0, 0, 0, 0, 0)
	unpriced.Priced = false
	m.Observe(unpriced)
	noBudget := entry(llmfleet.RouteSync, "claude-haiku-4-5", "overloaded_error", 0, 0, 0, 0, 0, 0, 0)
	noBudget.BudgetMet = false // no budget: not a miss
	m.Observe(noBudget)

	for _, c := range []struct {
		c    prometheus.Collector
		want float64
	}{
		{m.requests.WithLabelValues("sync", "claude-sonnet-4-6", "ok"), 1},
		{m.requests.WithLabelValues("batch", "claude-sonnet-4-6", "ok"), 2},
		{m.requests.WithLabelValues("batch", "claude-haiku-4-5", "budget_exceeded"), 1},
		{m.requests.WithLabelValues("sync", "mystery", "ok"), 1},
		{m.tokens.WithLabelValues("batch", "claude-sonnet-4-6", "input"), 2010},
		{m.tokens.WithLabelValues("batch", "claude-sonnet-4-6", "output"), 1010},
		{m.tokens.WithLabelValues("batch", "claude-sonnet-4-6", "cache_write_5m"), 300},
		{m.tokens.WithLabelValues("batch", "claude-sonnet-4-6", "cache_write_1h"), 10000},
		{m.tokens.WithLabelValues("batch", "claude-sonnet-4-6", "cache_read"), 20000},
		{m.tokens.WithLabelValues("sync", "mystery", "input"), 7},
		{m.cost.WithLabelValues("sync", "claude-sonnet-4-6"), 0.0105},
		{m.cost.WithLabelValues("batch", "claude-sonnet-4-6"), 0.0445},
		{m.saved, 0.0445},
		{m.budgetMisses, 1},
	} {
		if got := testutil.ToFloat64(c.c); fmt.Sprintf("%.9f", got) != fmt.Sprintf("%.9f", c.want) {
			t.Errorf("%v = %v, want %v", c.c.(prometheus.Metric).Desc(), got, c.want)
		}
	}
	// No cost series for an unpriced model.
	if n := testutil.CollectAndCount(m.cost); n != 2 {
		t.Errorf("%d cost series, want 2", n)
	}
}

func TestGauges(t *testing.T) {
	m, reg := newMetrics(t)
	m.SetQueueDepth(7)
	m.SetBatchesInFlight(2)
	want := `
# HELP llmfleet_batches_in_flight Batches created at the provider and not yet resolved.
# TYPE llmfleet_batches_in_flight gauge
llmfleet_batches_in_flight 2
# HELP llmfleet_queue_depth Requests waiting in pools for their batch.
# TYPE llmfleet_queue_depth gauge
llmfleet_queue_depth 7
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "llmfleet_queue_depth", "llmfleet_batches_in_flight"); err != nil {
		t.Error(err)
	}
	m.SetStatsFunc(func() llmfleet.Stats { return llmfleet.Stats{QueueDepth: 40, BatchesInFlight: 3} })
	want = strings.ReplaceAll(strings.ReplaceAll(want, "flight 2", "flight 3"), "depth 7", "depth 40")
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "llmfleet_queue_depth", "llmfleet_batches_in_flight"); err != nil {
		t.Error(err)
	}
}

func TestTurnaroundAndUpstreamErrors(t *testing.T) {
	m, reg := newMetrics(t)
	m.ObserveBatchTurnaround("claude-haiku-4-5", 90*time.Second)
	m.ObserveBatchTurnaround("claude-haiku-4-5", 2*time.Hour)
	m.ObserveBatchTurnaround("claude-sonnet-4-6", 3*time.Second)
	if n := testutil.CollectAndCount(m.turnaround); n != 2 {
		t.Errorf("%d turnaround series, want 2", n)
	}
	m.UpstreamError("overloaded_error")
	m.UpstreamError("overloaded_error")
	m.UpstreamError("network")
	if got := testutil.ToFloat64(m.upstream.WithLabelValues("overloaded_error")); got != 2 {
		t.Errorf("overloaded errors = %v", got)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "llmfleet_batch_turnaround_seconds" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			h := mt.GetHistogram()
			if mt.GetLabel()[0].GetValue() == "claude-haiku-4-5" && (h.GetSampleCount() != 2 || h.GetSampleSum() != 7290) {
				t.Errorf("haiku turnaround: count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
			}
		}
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

func TestExposition(t *testing.T) {
	m, reg := newMetrics(t)
	m.Observe(entry(llmfleet.RouteBatch, "claude-sonnet-4-6", "ok", 1, 1, 1, 1, 1, 0.5, 1))
	miss := entry(llmfleet.RouteBatch, "claude-sonnet-4-6", "ok", 1, 1, 0, 0, 0, 0.5, 1)
	miss.Budget, miss.BudgetMet = time.Second, false
	m.Observe(miss)
	m.ObserveBatchTurnaround("claude-sonnet-4-6", time.Minute)
	m.UpstreamError("http_502")
	srv := httptest.NewServer(Handler(reg))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("content type %q", ct)
	}
	text := string(body)
	for _, want := range []string{
		`llmfleet_requests_total{model="claude-sonnet-4-6",outcome="ok",route="batch"} 2`,
		`llmfleet_tokens_total{kind="cache_write_1h",model="claude-sonnet-4-6",route="batch"} 1`,
		`llmfleet_cost_usd_total{model="claude-sonnet-4-6",route="batch"} 1`,
		`llmfleet_saved_usd_total 1`,
		`llmfleet_queue_depth 0`,
		`llmfleet_batches_in_flight 0`,
		`llmfleet_batch_turnaround_seconds_bucket{model="claude-sonnet-4-6",le="60"} 1`,
		`llmfleet_batch_turnaround_seconds_bucket{model="claude-sonnet-4-6",le="86400"} 1`,
		`llmfleet_budget_misses_total 1`,
		`llmfleet_upstream_errors_total{kind="http_502"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("exposition lacks %s", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}

func TestNew(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
	reg := prometheus.NewRegistry()
	if _, err := New(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := New(reg); err == nil {
		t.Error("registering twice on one registry succeeded")
	}
}

func TestModelLabelCap(t *testing.T) {
	m, _ := newMetrics(t)
	for i := range maxLabelValues + 5 {
		m.Observe(entry(llmfleet.RouteSync, fmt.Sprintf("model-%d", i), "ok", 1, 1, 0, 0, 0, 0, 0))
	}
	if got := testutil.ToFloat64(m.requests.WithLabelValues("sync", "other", "ok")); got != 5 {
		t.Errorf("other = %v, want 5", got)
	}
	m.Observe(entry(llmfleet.RouteSync, "", "", 1, 1, 0, 0, 0, 0, 0))
	if got := testutil.ToFloat64(m.requests.WithLabelValues("sync", "unknown", "unknown")); got != 1 {
		t.Errorf("unknown = %v, want 1", got)
	}
}

func TestConcurrent(t *testing.T) {
	m, reg := newMetrics(t)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 100 {
				m.Observe(entry(llmfleet.RouteBatch, fmt.Sprint("m", j%3), "ok", 1, 1, 0, 0, 0, 0.25, 0.5))
				m.SetQueueDepth(int64(i))
				_, _ = reg.Gather()
			}
		})
	}
	wg.Wait()
	if got := testutil.ToFloat64(m.saved); got != 100 {
		t.Errorf("saved = %v, want 100", got)
	}
}
