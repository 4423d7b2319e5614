package metrics

import (
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkObserve counts the entry of a sync call, as the ledger hands
// one per request.
func BenchmarkObserve(b *testing.B) {
	m, err := New(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	e := llmfleet.LedgerEntry{Route: llmfleet.RouteSync, Provider: "anthropic", Model: "claude-x", Outcome: "ok",
		Usage: llmfleet.Usage{InputTokens: 10, OutputTokens: 5}, Latency: 80 * time.Millisecond,
		Priced: true, CostUSD: 0.001}
	b.ReportAllocs()
	for b.Loop() {
		m.Observe(e)
	}
}
