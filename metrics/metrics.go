// Package metrics exposes llmfleet's Prometheus metrics.
//
// New registers them on an injected prometheus.Registerer; nothing is
// registered globally. The metric names and labels are a public contract:
//
//	llmfleet_requests_total{route,model,outcome}      counter
//	llmfleet_tokens_total{route,model,kind}           counter (kind: input, output, cache_write_5m, cache_write_1h, cache_read)
//	llmfleet_cost_usd_total{route,model}              counter
//	llmfleet_saved_usd_total                          counter
//	llmfleet_routing_miss_usd_total{route,model}      counter
//	llmfleet_net_saved_usd                            gauge
//	llmfleet_queue_depth                              gauge
//	llmfleet_batches_in_flight                        gauge
//	llmfleet_batch_turnaround_seconds{model}          histogram
//	llmfleet_budget_misses_total                      counter
//	llmfleet_upstream_errors_total{kind}              counter
//	llmfleet_request_duration_seconds{route}          histogram (route: sync, batch)
//	llmfleet_build_info{version,revision,goversion}   gauge, always 1
//
// The prompt cache's tokens are those of llmfleet_tokens_total whose kind
// is cache_read (read from the cache), cache_write_5m or cache_write_1h
// (written to it), by route and model; the cache hit rate of a route and
// model over a range is its read tokens over its read and written ones:
//
//	sum by (route, model) (rate(llmfleet_tokens_total{kind="cache_read"}[1h]))
//	  / sum by (route, model) (rate(llmfleet_tokens_total{kind=~"cache_.*"}[1h]))
//
// llmfleet_saved_usd_total counts what each request served at a discount
// saved when it saved: a counter cannot go down, so a batched request that
// cost more than the sync route would have (its prefix warm in the sync
// cache, written again in the batch's) is left out of it, and is in
// llmfleet_net_saved_usd, whose figure is ledger.Summary's.
//
// llmfleet_routing_miss_usd_total is what requests paid for cache writes
// their route caused (LedgerEntry.MissUSD: a prefix the other route's
// cache held, written again). llmfleet_net_saved_usd is what the
// requests this process counted saved net of the routing misses their
// saving does not count already (ledger.NetSaving; the running figure of
// ledger.Summary.NetSavedUSD): a gauge, since a sync request that paid
// for a routing miss takes it down.
//
// The model label takes at most 200 distinct values, and with a model
// filter (SetModelFilter) only the models it knows, such as those of the
// price table: any other model is "other", so that clients naming models
// at random cannot blow up the number of series.
package metrics

import (
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TurnaroundBuckets are the buckets of llmfleet_batch_turnaround_seconds,
// from a second to the 24-hour batch expiry.
var TurnaroundBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 43200, 86400}

// DurationBuckets are the buckets of llmfleet_request_duration_seconds,
// from the 50 ms of a short sync call to the 24-hour batch expiry.
var DurationBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400}

// maxLabelValues caps the distinct values of the model and kind labels, so
// that clients naming arbitrary models cannot blow up the series count;
// further values are reported as "other".
const maxLabelValues = 200

// Metrics holds llmfleet's metrics. Its methods are safe for concurrent use.
type Metrics struct {
	requests     *prometheus.CounterVec
	tokens       *prometheus.CounterVec
	cost         *prometheus.CounterVec
	saved        prometheus.Counter
	routingMiss  *prometheus.CounterVec
	netSaved     prometheus.Gauge
	turnaround   *prometheus.HistogramVec
	budgetMisses prometheus.Counter
	upstream     *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	gauges       *gauges
	known        atomic.Pointer[func(provider, model string) bool]
	models       labelSet
	kinds        labelSet
	series       seriesCache // Observe's series by route and model
}

// New creates the metrics and registers them on reg.
func New(reg prometheus.Registerer) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("metrics: nil Registerer")
	}
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmfleet_requests_total",
			Help: "Requests answered or failed, by route, model and outcome (ok or the error type).",
		}, []string{"route", "model", "outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmfleet_tokens_total",
			Help: "Tokens used, by route, model and kind (input, output, cache_write_5m, cache_write_1h, cache_read).",
		}, []string{"route", "model", "kind"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmfleet_cost_usd_total",
			Help: "Cost in USD at list prices of the requests of priced models, by route and model.",
		}, []string{"route", "model"}),
		saved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "llmfleet_saved_usd_total",
			Help: "USD saved by the discounted requests that saved: what each would have cost at the sync route, minus what it cost, when positive (see llmfleet_net_saved_usd for the figure net of those that cost more).",
		}),
		routingMiss: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmfleet_routing_miss_usd_total",
			Help: "USD paid for cache writes a request's route caused (a prompt prefix the other route's cache held, written again), by route and model.",
		}, []string{"route", "model"}),
		netSaved: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "llmfleet_net_saved_usd",
			Help: "USD saved since the start net of routing misses: what the requests would have cost at the sync route, minus what they cost, minus the cache writes routing caused on requests paid at the sync price.",
		}),
		turnaround: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "llmfleet_batch_turnaround_seconds",
			Help:    "Time from a batch's creation to its end at the provider, by model.",
			Buckets: TurnaroundBuckets,
		}, []string{"model"}),
		budgetMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "llmfleet_budget_misses_total",
			Help: "Requests answered after their latency budget ran out, or not at all because it did.",
		}),
		upstream: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "llmfleet_upstream_errors_total",
			Help: "Errors of calls to the provider, by kind (the provider's error type, http_<status> or network).",
		}, []string{"kind"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "llmfleet_request_duration_seconds",
			Help:    "Time from a request's arrival to its answer, by route (sync or batch).",
			Buckets: DurationBuckets,
		}, []string{"route"}),
		gauges: newGauges(),
	}
	for _, c := range []prometheus.Collector{m.requests, m.tokens, m.cost, m.saved, m.routingMiss, m.netSaved, m.turnaround, m.budgetMisses, m.upstream, m.duration, m.gauges, buildInfo()} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// The usual kinds start at zero, so the metric is scrapeable (and
	// rate() works) before the first error.
	for _, k := range []string{"network", "rate_limit_error", "overloaded_error", "api_error", "timeout_error"} {
		m.upstream.WithLabelValues(m.kinds.value(k))
	}
	for _, r := range []llmfleet.Route{llmfleet.RouteSync, llmfleet.RouteFlex, llmfleet.RouteBatch} {
		m.duration.WithLabelValues(string(r))
	}
	return m, nil
}

// Observe counts one ledger entry: the request, its tokens, its cost, what
// batching saved, its routing miss and its net saving, and whether it
// missed its budget.
func (m *Metrics) Observe(e llmfleet.LedgerEntry) {
	route := string(e.Route)
	if route == "" {
		route = string(llmfleet.RouteSync)
	}
	model := m.model(e.Provider, e.Model)
	outcome := e.Outcome
	if outcome == "" {
		outcome = "unknown"
	}
	rs := m.series.of(route, model)
	if rs == nil { // more route and model pairs than the cache keeps
		rs = &routeSeries{}
	}
	rs.request(m.requests, route, model, outcome).Inc()
	w5m, w1h := e.Usage.CacheWrites()
	for i, n := range [len(tokenKinds)]int64{e.Usage.InputTokens, e.Usage.OutputTokens, w5m, w1h, e.Usage.CacheReadInputTokens} {
		if n > 0 {
			rs.counter(&rs.tokens[i], m.tokens, route, model, tokenKinds[i]).Add(float64(n))
		}
	}
	if e.Priced {
		if e.CostUSD > 0 {
			rs.counter(&rs.cost, m.cost, route, model, "").Add(e.CostUSD)
		}
		if saved := e.OtherRouteUSD - e.CostUSD; e.Discounted() && saved > 0 {
			m.saved.Add(saved)
		}
		m.netSaved.Add(ledger.NetSaving(e))
	}
	if e.MissUSD > 0 {
		rs.counter(&rs.miss, m.routingMiss, route, model, "").Add(e.MissUSD)
	}
	if e.Budget > 0 && !e.BudgetMet {
		m.budgetMisses.Inc()
	}
	if e.Latency > 0 {
		rs.observer(m.duration, route).Observe(e.Latency.Seconds())
	}
}

// SetModelFilter makes the model label "other" for every model known
// reports false (for instance those the price table does not price);
// "unknown", the model of a call that named none, stays. Nil undoes it.
func (m *Metrics) SetModelFilter(known func(provider, model string) bool) {
	if known == nil {
		m.known.Store(nil)
		return
	}
	m.known.Store(&known)
}

// model returns the model label of a provider's model.
func (m *Metrics) model(provider, model string) string {
	if f := m.known.Load(); f != nil && model != "" && model != "unknown" && !(*f)(provider, model) {
		return "other"
	}
	return m.models.value(model)
}

// ObserveBatchTurnaround records how long a batch of a model took at the
// provider.
func (m *Metrics) ObserveBatchTurnaround(model string, d time.Duration) {
	m.turnaround.WithLabelValues(m.model("", model)).Observe(d.Seconds())
}

// UpstreamError counts an error of a call to the provider; kind is the
// provider's error type, "http_<status>" or "network".
func (m *Metrics) UpstreamError(kind string) {
	if kind == "" {
		kind = "unknown"
	}
	m.upstream.WithLabelValues(m.kinds.value(kind)).Inc()
}

// SetQueueDepth sets llmfleet_queue_depth, the requests waiting in pools.
// It is ignored while a stats function is set.
func (m *Metrics) SetQueueDepth(n int64) { m.gauges.queue.Store(n) }

// SetBatchesInFlight sets llmfleet_batches_in_flight. It is ignored while
// a stats function is set.
func (m *Metrics) SetBatchesInFlight(n int64) { m.gauges.inFlight.Store(n) }

// SetStatsFunc makes the gauges read the dispatcher's counters at each
// scrape (QueueDepth and BatchesInFlight of f's result) instead of the
// values set with SetQueueDepth and SetBatchesInFlight; nil undoes it. The
// dispatcher's Stats method fits.
func (m *Metrics) SetStatsFunc(f func() llmfleet.Stats) {
	if f == nil {
		m.gauges.stats.Store(nil)
		return
	}
	m.gauges.stats.Store(&f)
}

// Handler serves the metrics gathered by g in the Prometheus text format,
// for GET /metrics.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
}

// labelSet caps the distinct values of a label.
type labelSet struct {
	mu   sync.Mutex
	seen map[string]bool
}

// value returns v, "unknown" for an empty v, or "other" once the set is
// full and v is not in it.
func (s *labelSet) value(v string) string {
	if v == "" {
		return "unknown"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen[v] {
		return v
	}
	if len(s.seen) >= maxLabelValues {
		return "other"
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[v] = true
	return v
}

// gauges collects llmfleet_queue_depth and llmfleet_batches_in_flight,
// from a stats function when one is set.
type gauges struct {
	queueDesc, inFlightDesc *prometheus.Desc
	queue, inFlight         atomic.Int64
	stats                   atomic.Pointer[func() llmfleet.Stats]
}

func newGauges() *gauges {
	return &gauges{
		queueDesc:    prometheus.NewDesc("llmfleet_queue_depth", "Requests waiting in pools for their batch.", nil, nil),
		inFlightDesc: prometheus.NewDesc("llmfleet_batches_in_flight", "Batches created at the provider and not yet resolved.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (g *gauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.queueDesc
	ch <- g.inFlightDesc
}

// Collect implements prometheus.Collector.
func (g *gauges) Collect(ch chan<- prometheus.Metric) {
	queue, inFlight := g.queue.Load(), g.inFlight.Load()
	if f := g.stats.Load(); f != nil {
		s := (*f)()
		queue, inFlight = s.QueueDepth, s.BatchesInFlight
	}
	ch <- prometheus.MustNewConstMetric(g.queueDesc, prometheus.GaugeValue, float64(queue))
	ch <- prometheus.MustNewConstMetric(g.inFlightDesc, prometheus.GaugeValue, float64(inFlight))
}
