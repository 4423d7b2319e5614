package metrics

import (
	"fmt"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The prompt cache's figures: cache tokens by route and model (in
// llmfleet_tokens_total, whence the hit rates), routing misses by route and
// model, and the saving net of the misses it does not count.
func TestObserveCache(t *testing.T) {
	m, reg := newMetrics(t)
	syncMiss := entry(llmfleet.RouteSync, "claude-sonnet-4-6", "ok", 10, 10, 1000, 0, 3000, 0.02, 0.01)
	syncMiss.MissUSD = 0.004
	batchMiss := entry(llmfleet.RouteBatch, "claude-sonnet-4-6", "ok", 10, 10, 0, 2000, 0, 0.03, 0.08)
	batchMiss.MissUSD = 0.01
	late := entry(llmfleet.RouteSync, "claude-haiku-4-5", "ok", 10, 10, 500, 0, 0, 0.01, 0.005)
	late.Rescue, late.MissUSD = llmfleet.RescueLate, 0.002
	unpriced := entry(llmfleet.RouteSync, "mystery", "ok", 10, 10, 0, 0, 100, 0, 0)
	unpriced.Priced, unpriced.MissUSD = false, 0.001
	for _, e := range []llmfleet.LedgerEntry{syncMiss, batchMiss, late, unpriced,
		entry(llmfleet.RouteFlex, "claude-haiku-4-5", "ok", 10, 10, 0, 0, 900, 0.01, 0.02)} {
		m.Observe(e)
	}
	for _, c := range []struct {
		name string
		c    prometheus.Collector
		want float64
	}{
		{"sync sonnet read", m.tokens.WithLabelValues("sync", "claude-sonnet-4-6", "cache_read"), 3000},
		{"sync sonnet 5m writes", m.tokens.WithLabelValues("sync", "claude-sonnet-4-6", "cache_write_5m"), 1000},
		{"batch sonnet 1h writes", m.tokens.WithLabelValues("batch", "claude-sonnet-4-6", "cache_write_1h"), 2000},
		{"flex haiku read", m.tokens.WithLabelValues("flex", "claude-haiku-4-5", "cache_read"), 900},
		{"sync sonnet routing miss", m.routingMiss.WithLabelValues("sync", "claude-sonnet-4-6"), 0.004},
		{"batch sonnet routing miss", m.routingMiss.WithLabelValues("batch", "claude-sonnet-4-6"), 0.01},
		{"late haiku routing miss", m.routingMiss.WithLabelValues("sync", "claude-haiku-4-5"), 0.002},
		{"unpriced routing miss", m.routingMiss.WithLabelValues("sync", "mystery"), 0.001},
		// Saved: 0.05 (batch) + 0.01 (flex) - 0.01 (the late answer's
		// cost, lost); less the sync entry's miss 0.004. The batch's
		// miss is in its saving already, the late one's in its cost.
		{"net saved", m.netSaved, 0.05 + 0.01 - 0.01 - 0.004},
		{"saved (unchanged)", m.saved, 0.06},
	} {
		if got := testutil.ToFloat64(c.c); fmt.Sprintf("%.9f", got) != fmt.Sprintf("%.9f", c.want) {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.routingMiss); n != 4 {
		t.Errorf("%d routing miss series, want 4 (none for entries without a miss)", n)
	}
	// The hit rate of sync sonnet, as the package doc's query computes it.
	read := testutil.ToFloat64(m.tokens.WithLabelValues("sync", "claude-sonnet-4-6", "cache_read"))
	written := testutil.ToFloat64(m.tokens.WithLabelValues("sync", "claude-sonnet-4-6", "cache_write_5m"))
	if rate := read / (read + written); rate != 0.75 {
		t.Errorf("sync sonnet hit rate %v, want 0.75", rate)
	}
	want := `
# HELP llmfleet_net_saved_usd USD saved since the start net of routing misses: what the requests would have cost at the sync route, minus what they cost, minus the cache writes routing caused on requests paid at the sync price.
# TYPE llmfleet_net_saved_usd gauge
llmfleet_net_saved_usd 0.046
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "llmfleet_net_saved_usd"); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
