package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claude"
	"github.com/llmfleet/llmfleet/dashboard"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/metrics"
	"github.com/llmfleet/llmfleet/pricing"
	"github.com/llmfleet/llmfleet/proxy"
)

// observeFlags are the logging flags of "llmfleet serve".
type observeFlags struct {
	logFormat *string
	logBodies *bool
}

// addObserveFlags defines --log-format and --log-bodies on fs.
func addObserveFlags(fs *flag.FlagSet) *observeFlags {
	return &observeFlags{
		logFormat: fs.String("log-format", "text", "log format: text or json (one JSON object per line)"),
		logBodies: fs.Bool("log-bodies", false, "log the request and response bodies of /v1/messages at debug level (implies -v); never logged otherwise"),
	}
}

// logger returns the logger the flags ask for, at debug level if verbose
// or --log-bodies.
func (f *observeFlags) logger(w io.Writer, verbose bool) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if verbose || *f.logBodies {
		opts.Level = slog.LevelDebug
	}
	switch *f.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format must be text or json, not %q", *f.logFormat)
	}
}

// priceTable returns the embedded price table overridden and extended by
// the pricing section of the config file, if any (same shape as the
// pricing package's prices.yaml).
func priceTable(section yaml.Node) (*pricing.Table, error) {
	t := pricing.Default()
	if section.Kind == 0 {
		return t, nil
	}
	doc, err := yaml.Marshal(&section)
	if err != nil {
		return nil, fmt.Errorf("config: pricing: %v", err)
	}
	if err := t.Merge(bytes.NewReader(doc)); err != nil {
		return nil, fmt.Errorf("config: %v", err)
	}
	return t, nil
}

// observability is the cost ledger, the metrics and the dashboard of
// "llmfleet serve". Every ledger entry, from the dispatcher (batched
// requests) and from the proxy (the sync route), is priced, counted in
// the running totals, the metrics and the dashboard's history, and
// written to the store by a background writer.
type observability struct {
	table    *pricing.Table
	totals   ledger.Totals
	registry *prometheus.Registry
	metrics  *metrics.Metrics
	history  dashboard.History
	store    llmfleet.Store
	writer   *ledger.Writer // nil without a store
	log      *slog.Logger

	provider string // the name given to entries that name none
	stats    func() llmfleet.Stats
	inflight func() []dispatch.FlightInfo
}

// newObservability sets up the ledger, the metrics on a registry of their
// own and, if store is not nil, the writer of the ledger to it.
func newObservability(table *pricing.Table, store llmfleet.Store, log *slog.Logger) (*observability, error) {
	o := &observability{table: table, registry: prometheus.NewRegistry(), store: store, log: log,
		stats: func() llmfleet.Stats { return llmfleet.Stats{} }}
	m, err := metrics.New(o.registry)
	if err != nil {
		return nil, err
	}
	o.metrics = m
	if store != nil {
		o.writer = ledger.NewWriter(store, 0, log)
	}
	return o, nil
}

// wireDispatcher hooks the dispatcher's ledger entries and batch
// turnarounds, reads its counters for the gauges, and counts the upstream
// errors of its Anthropic providers (whose HTTP client it sets if unset).
// Call it before d.Open.
func (o *observability) wireDispatcher(d *dispatch.Dispatcher) {
	if len(d.Providers) > 0 {
		o.provider = d.Providers[0].Name()
	}
	for _, p := range d.Providers {
		if cp, ok := p.(*claude.Provider); ok && cp.HTTPClient == nil {
			t := http.DefaultTransport.(*http.Transport).Clone()
			t.MaxIdleConnsPerHost = 64
			cp.HTTPClient = &http.Client{Transport: &errorCounter{base: t, count: o.metrics.UpstreamError}}
		}
	}
	d.Observe = o.observe
	d.ObserveTurnaround = o.observeTurnaround
	o.stats = d.Stats
	o.inflight = d.InFlight
	o.metrics.SetStatsFunc(d.Stats)
}

// wireProxy hooks the ledger entries and upstream errors of the proxy's
// sync route.
func (o *observability) wireProxy(srv *proxy.Server) {
	srv.Observe = o.observe
	srv.UpstreamError = o.metrics.UpstreamError
}

// observe prices an entry and counts it everywhere. It is quick: the
// dispatcher calls it with its lock held.
func (o *observability) observe(e llmfleet.LedgerEntry) {
	if e.Provider == "" {
		e.Provider = o.provider
	}
	if e.Model == "" {
		// A sync call that failed before its response named a model,
		// and whose body routing did not need to read.
		e.Model = "unknown"
	}
	e = ledger.Make(o.table.Cost, e)
	if !e.Priced && e.Usage == (llmfleet.Usage{}) {
		e.Priced = true // no tokens: nothing to price, whatever the model
	}
	o.totals.Add(e)
	o.metrics.Observe(e)
	// The history takes batch turnarounds from observeTurnaround, once
	// per batch and model, even for batches whose every request failed.
	h := e
	h.Turnaround = 0
	o.history.Add(h)
	if o.writer != nil {
		if err := o.writer.Add(e); err != nil {
			o.log.Warn("ledger entry not stored", "request_id", e.RequestID, "err", err)
		}
	}
}

// observeTurnaround records the turnaround of an ended batch of a model.
func (o *observability) observeTurnaround(_, model string, d time.Duration) {
	o.metrics.ObserveBatchTurnaround(model, d)
	o.history.AddTurnaround(model, time.Now(), d)
}

// handler serves the observability endpoints in front of the proxy:
//
//	GET /llmfleet/v1/stats      the ledger summary as JSON (since start; ?since=24h or ?from=&to= read the store)
//	GET /llmfleet/v1/dashboard  the dashboard's snapshot, batches in flight included
//	GET /llmfleet/              the dashboard page
//	GET /metrics                Prometheus metrics
//
// and everything else to the proxy. None of them asks for a key, even in
// proxy-held-key mode: they show aggregates (costs, token counts, models,
// batch ids), never a prompt, an answer or a key, and the dashboard page
// and Prometheus scrapers fetch them without credentials. Expose the
// listen address accordingly.
func (o *observability) handler(next http.Handler, withBodies bool) http.Handler {
	if withBodies {
		next = logBodies(next, o.log)
	}
	src := &dashboard.Source{History: &o.history, Stats: o.stats, InFlight: o.batchesInFlight}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /llmfleet/v1/stats", o.serveStats)
	mux.Handle("GET /llmfleet/v1/dashboard", dashboard.SnapshotHandler(src.Snapshot))
	mux.Handle("GET /llmfleet/", dashboard.Handler())
	mux.Handle("GET "+proxy.RequestsPath, next)
	mux.Handle("GET /metrics", metrics.Handler(o.registry))
	mux.Handle("/", next)
	return mux
}

// batchesInFlight lists the dispatcher's batches in flight for the
// dashboard.
func (o *observability) batchesInFlight(context.Context) ([]dashboard.BatchInFlight, error) {
	if o.inflight == nil {
		return nil, nil
	}
	now := time.Now()
	var out []dashboard.BatchInFlight
	for _, f := range o.inflight() {
		state := "created"
		if f.Ended {
			state = "ended"
		}
		out = append(out, dashboard.BatchInFlight{ID: f.ID, UpstreamID: f.ID, Provider: f.Provider, Models: f.Models,
			Size: f.Requests, State: state, Since: f.Submitted, AgeSeconds: now.Sub(f.Submitted).Seconds()})
	}
	return out, nil
}

// serveStats serves GET /llmfleet/v1/stats: the totals since the proxy
// started, or with ?since=<duration> (e.g. 24h, 7d) or ?from=&to= (RFC
// 3339) the ledger of that period read from the store.
func (o *observability) serveStats(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var s ledger.Summary
	if q.Get("since") == "" && q.Get("from") == "" && q.Get("to") == "" {
		s = o.totals.Summary()
		s.BatchesSubmitted = o.stats().BatchesSubmitted
	} else {
		p, err := ledger.ParsePeriod(q.Get("since"), q.Get("from"), q.Get("to"), time.Now())
		if err != nil {
			writeJSONError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		}
		if o.store == nil {
			writeJSONError(w, http.StatusNotFound, "not_found_error", "llmfleet keeps no ledger to read a period from")
			return
		}
		if o.writer != nil {
			if err := o.writer.Flush(r.Context()); err != nil {
				return // the caller left
			}
		}
		if s, err = ledger.SummarizePeriod(r.Context(), o.store, p); err != nil {
			writeJSONError(w, http.StatusInternalServerError, "api_error", "reading the ledger: "+err.Error())
			return
		}
	}
	body, err := json.Marshal(s)
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, "api_error", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(body)
}

// writeJSONError answers in the Anthropic error envelope.
func writeJSONError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(llmfleet.ErrorEnvelope(typ, msg, llmfleet.NewID("req_")))
}

// close writes the ledger entries still pending and logs the totals.
func (o *observability) close(ctx context.Context) {
	if o.writer != nil {
		if err := o.writer.Close(ctx); err != nil {
			o.log.Warn("ledger entries still pending at shutdown", "err", err)
		}
	}
	s := o.totals.Summary()
	o.log.Info("cost ledger", "sync_calls", s.SyncCalls, "batched_calls", s.BatchedCalls,
		"paid_usd", s.CostUSD, "sync_equivalent_usd", s.SyncEquivalentUSD, "saved_usd", s.SavedUSD,
		"budget_misses", s.BudgetMisses, "unpriced_requests", s.UnpricedRequests)
}
