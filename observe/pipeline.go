package observe

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/dashboard"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/metrics"
)

// Config is what a Pipeline is made of. Every field is optional.
type Config struct {
	// Price prices the entries (the Cost method of a pricing.Table fits);
	// nil leaves them unpriced.
	Price ledger.PriceFunc
	// Canonical, if set, gives every name of one model the same name
	// (the Canonical method of a pricing.Table fits: a dated id such as
	// claude-haiku-4-5-20251001 is claude-haiku-4-5), so that per-model
	// figures in the ledger, the metrics and the dashboard count a model
	// once; nil keeps the names the answers give.
	Canonical func(provider, model string) string
	// Store, if set, is where Observe records the entries, through a
	// ledger.Writer, and whence the stats of a period are read.
	Store llmfleet.Store
	// Backlog is the most entries waiting for the store before Observe
	// waits for room; 0 means ledger.DefaultBacklog.
	Backlog int
	// Registry gets the metrics, and /metrics serves it; nil means a
	// registry of the pipeline's own.
	Registry *prometheus.Registry
	// Logger gets the pipeline's warnings and, at Close, the totals; nil
	// discards them.
	Logger *slog.Logger
	// Clock tells the time; nil means the real clock.
	Clock llmfleet.Clock
	// Provider is the name given to the entries that name none.
	Provider string
	// Stats returns the dispatcher's counters, for the gauges, the stats
	// and the dashboard; nil reports zeros.
	Stats func() llmfleet.Stats
	// InFlight lists the dispatcher's batches in flight for the
	// dashboard; nil lists none.
	InFlight func() []dispatch.FlightInfo
	// SampleInterval is how often the queue depth and batches in flight
	// are sampled into the dashboard's history (from New to Close,
	// whether a page is open or not); 0 means
	// dashboard.DefaultSampleInterval, a negative value samples nothing.
	SampleInterval time.Duration
	// Booked, if set, is called with every entry once priced and counted
	// (the Paid method of a ledger.Spend fits: this process's payments
	// count against the limits at once).
	Booked func(llmfleet.LedgerEntry)
	// Clients, if set, returns the clients with limits and what they paid
	// today and this month, for the stats (Summary.Clients; the Clients
	// method of a ledger.Spend fits).
	Clients func(ctx context.Context) []ledger.ClientStatus
	// AdminKey, if set, is the key (x-api-key or Authorization: Bearer)
	// that shows the per-request fields of /llmfleet/v1/stats and
	// /llmfleet/v1/dashboard; anyone else, and everyone when it is empty,
	// gets aggregates only (see Pipeline.Handler). It is kept only as a
	// hash.
	AdminKey string
}

// Pipeline prices, counts and records the ledger entries of llmfleet
// serve, and serves what it counted. Make one with New; its methods are
// safe for concurrent use.
type Pipeline struct {
	cfg      Config
	log      *slog.Logger
	clock    llmfleet.Clock
	registry *prometheus.Registry
	metrics  *metrics.Metrics
	totals   ledger.Totals
	history  dashboard.History
	sampler  *dashboard.Sampler // nil when not sampling
	writer   *ledger.Writer     // nil without a store
	admin    adminGate
	lane     *Lane[laneEntry] // the bookkeeping, off the answering goroutines
	fleet    fleetTotals      // the store's whole ledger, read a little at a time
}

// laneEntry is an entry handed to the lane: store tells whether it goes
// to the store too (Observe) or is only counted (Counted).
type laneEntry struct {
	e     llmfleet.LedgerEntry
	store bool
}

// laneBacklog is the most entries waiting in the lane before the next
// one is booked by its own caller.
const laneBacklog = 4096

// New makes a pipeline, registers its metrics, starts sampling the queue
// for the dashboard and, with a store, seeds the dashboard's history from
// the ledger in it (seedHistory) and starts the writer of the ledger to
// it. Close it when done.
func New(cfg Config) (*Pipeline, error) {
	p := &Pipeline{cfg: cfg, log: cfg.Logger, clock: cfg.Clock, registry: cfg.Registry, admin: newAdminGate(cfg.AdminKey)}
	p.cfg.AdminKey = ""
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.clock == nil {
		p.clock = llmfleet.RealClock{}
	}
	if p.registry == nil {
		p.registry = prometheus.NewRegistry()
	}
	if p.cfg.Stats == nil {
		p.cfg.Stats = func() llmfleet.Stats { return llmfleet.Stats{} }
	}
	m, err := metrics.New(p.registry)
	if err != nil {
		return nil, err
	}
	m.SetStatsFunc(p.cfg.Stats)
	if price := cfg.Price; price != nil {
		// The model label names only the models of the price table.
		m.SetModelFilter(func(provider, model string) bool {
			if provider == "" {
				provider = cfg.Provider
			}
			_, known := price(provider, model, llmfleet.Usage{}, llmfleet.RouteSync)
			return known
		})
	}
	p.metrics = m
	if cfg.Store != nil {
		p.writer = ledger.NewGroupWriter(cfg.Store, cfg.Backlog, ledger.DefaultWindow, p.log)
	}
	p.lane = NewLane(laneBacklog, p.book)
	if cfg.Store != nil {
		p.seedHistory()
	}
	if cfg.SampleInterval >= 0 {
		p.sampler = &dashboard.Sampler{History: &p.history, Stats: p.cfg.Stats, Interval: cfg.SampleInterval, Clock: p.clock}
		p.sampler.Open()
	}
	return p, nil
}

// Price returns e with its provider and model named (Config.Provider,
// and "unknown" for a call that failed before naming one) and its costs
// filled in. A failed call without tokens counts as priced, whatever its
// model: there is nothing to price. An answer ("ok") without tokens does
// not: its usage was not read (a stream whose usage the proxy could not
// find, say), and $0 would be a price it never had.
func (p *Pipeline) Price(e llmfleet.LedgerEntry) llmfleet.LedgerEntry {
	if e.Provider == "" {
		e.Provider = p.cfg.Provider
	}
	if e.Model == "" {
		// A sync call that failed before its response named a model,
		// and whose body routing did not need to read.
		e.Model = "unknown"
	} else if p.cfg.Canonical != nil {
		e.Model = p.cfg.Canonical(e.Provider, e.Model)
	}
	e = ledger.Make(p.cfg.Price, e)
	switch {
	case e.Usage != (llmfleet.Usage{}):
	case e.Outcome == "ok":
		e.CostUSD, e.OtherRouteUSD, e.Priced = 0, 0, false
	default:
		e.Priced = true
	}
	return e
}

// Counted prices an entry and counts it in the running totals, the
// metrics and the dashboard's history, without recording it in the store:
// it is for entries that their maker records itself. Like Observe, it
// hands the entry over and returns.
func (p *Pipeline) Counted(e llmfleet.LedgerEntry) {
	p.lane.Add(laneEntry{e: e})
}

// Observe prices an entry, counts it like Counted and queues it for the
// store. It is the Observe hook of the dispatcher and of the proxy, and is
// quick: it hands the entry to the pipeline's own goroutine, which books
// the entries of many calls together within LaneDelay (Settle books them
// at once). It waits only when thousands of entries are waiting, or when
// the store has fallen a whole backlog behind, until it catches up (the
// dispatcher's lock may then be held: it holds back the engine rather
// than lose an entry).
func (p *Pipeline) Observe(e llmfleet.LedgerEntry) {
	p.lane.Add(laneEntry{e: e, store: true})
}

// Settle books every entry handed over so far before it returns: what is
// counted, served and summed afterwards includes them. Summary and the
// endpoints of Handler settle first.
func (p *Pipeline) Settle() { p.lane.Settle() }

// book prices and counts an entry and, for Observe, queues it for the
// store.
func (p *Pipeline) book(le laneEntry) {
	e := p.Price(le.e)
	p.count(e)
	if p.cfg.Booked != nil {
		p.cfg.Booked(e)
	}
	if le.store && p.writer != nil {
		if err := p.writer.Add(e); err != nil {
			p.log.Warn("ledger entry not stored", "request_id", e.RequestID, "err", err)
		}
	}
}

func (p *Pipeline) count(e llmfleet.LedgerEntry) {
	p.totals.Add(e)
	p.metrics.Observe(e)
	// The history takes batch turnarounds from ObserveTurnaround, once
	// per batch and model, even for batches whose every request failed.
	e.Turnaround = 0
	p.history.Add(e)
}

// ObserveTurnaround records the turnaround of an ended batch of a model:
// the dispatcher's ObserveTurnaround hook.
func (p *Pipeline) ObserveTurnaround(_, model string, d time.Duration) {
	p.metrics.ObserveBatchTurnaround(model, d)
	p.history.AddTurnaround(model, p.clock.Now(), d)
}

// UpstreamError counts a failed call to the provider of a kind (its
// error type, http_<status> or network): the proxy's UpstreamError hook.
func (p *Pipeline) UpstreamError(kind string) { p.metrics.UpstreamError(kind) }

// CountErrors returns base (nil: http.DefaultTransport) wrapped in an
// ErrorCounter that counts in the pipeline's metrics.
func (p *Pipeline) CountErrors(base http.RoundTripper) http.RoundTripper {
	return &ErrorCounter{Base: base, Count: p.metrics.UpstreamError}
}

// Summary returns the running totals since the pipeline started, as GET
// /llmfleet/v1/stats serves them without a period.
func (p *Pipeline) Summary() ledger.Summary {
	p.Settle()
	s := p.totals.Summary()
	s.BatchesSubmitted = p.cfg.Stats().BatchesSubmitted
	return s
}

// Close writes the entries still queued for the store, waiting until ctx
// ends at most, and logs the totals. It returns the writer's error: ctx's
// when entries were still pending.
func (p *Pipeline) Close(ctx context.Context) error {
	if p.sampler != nil {
		p.sampler.Close()
	}
	err := p.lane.Close(ctx)
	if p.writer != nil {
		if werr := p.writer.Close(ctx); err == nil {
			err = werr
		}
	}
	s := p.totals.Summary()
	p.log.Info("cost ledger", "sync_calls", s.SyncCalls, "batched_calls", s.BatchedCalls,
		"paid_usd", ledger.USD(s.CostUSD), "sync_equivalent_usd", ledger.USD(s.SyncEquivalentUSD), "saved_usd", ledger.USD(s.SavedUSD),
		"routing_miss_usd", ledger.USD(s.RoutingMissUSD), "net_saved_usd", ledger.USD(s.NetSavedUSD), "cache_hit_rate", s.CacheHitRate,
		"budget_misses", s.BudgetMisses, "unpriced_requests", s.UnpricedRequests)
	return err
}
