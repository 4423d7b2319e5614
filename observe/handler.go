package observe

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
	"github.com/llmfleet/llmfleet/dashboard"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/metrics"
	"github.com/llmfleet/llmfleet/proxy"
)

// Handler serves the observability endpoints in front of the proxy:
//
//	GET /llmfleet/v1/stats      the ledger summary as JSON (since start, or the fleet's since its start with
//	                            Config.FleetSince; ?since=24h or ?from=&to= read the store)
//	GET /llmfleet/v1/dashboard  the dashboard's snapshot, batches in flight included
//	GET /llmfleet/              the dashboard page
//	GET /metrics                Prometheus metrics
//
// and everything else (the async tickets API under /llmfleet/v1/requests/
// included, and every path with doubled slashes) to next, untouched: the
// proxy folds doubled slashes itself. An unknown path under /llmfleet/ or
// a method these endpoints do not serve is answered in the Anthropic error
// envelope (404 not_found_error, 405 invalid_request_error with Allow).
// None of them refuses a caller without a key, even in proxy-held-key
// mode, so that the dashboard page and Prometheus scrapers work without
// credentials: they show aggregates (costs, token counts, by model, by
// route, by client), never a prompt, an answer or a key. What is per
// request (the stats' recent budget misses, with their request ids; the
// ids of the batches in flight on the dashboard) is shown only to a
// caller presenting Config.AdminKey as x-api-key or Authorization:
// Bearer; everyone else gets the list empty and the ids blank. Expose the
// listen address accordingly.
func (p *Pipeline) Handler(next http.Handler) http.Handler {
	src := &dashboard.Source{History: &p.history, Stats: p.cfg.Stats, InFlight: p.batchesInFlight, Clock: p.clock}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /llmfleet/v1/stats", p.serveStats)
	mux.HandleFunc("GET /llmfleet/v1/dashboard", func(w http.ResponseWriter, r *http.Request) {
		dashboard.SnapshotHandler(snapshotFor(src, p.admin.admits(r))).ServeHTTP(w, r)
	})
	mux.Handle("GET /llmfleet/", dashboard.Handler())
	mux.Handle("GET /metrics", metrics.Handler(p.registry))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ownPath(r, proxy.RequestsPath) {
			next.ServeHTTP(w, r)
			return
		}
		p.Settle() // what they serve counts every call answered before
		mux.ServeHTTP(&envelopeWriter{ResponseWriter: w, r: r}, r)
	})
}

// batchesInFlight lists the dispatcher's batches in flight for the
// dashboard.
func (p *Pipeline) batchesInFlight(context.Context) ([]dashboard.BatchInFlight, error) {
	if p.cfg.InFlight == nil {
		return nil, nil
	}
	now := p.clock.Now()
	var out []dashboard.BatchInFlight
	for _, f := range p.cfg.InFlight() {
		state := "created"
		if f.Ended {
			state = "ended"
		}
		out = append(out, dashboard.BatchInFlight{ID: f.ID, UpstreamID: f.ID, Provider: f.Provider, Models: f.Models,
			Size: f.Requests, State: state, Since: f.Submitted, AgeSeconds: now.Sub(f.Submitted).Seconds()})
	}
	return out, nil
}

// serveStats serves GET /llmfleet/v1/stats: the totals since the pipeline
// started, or with ?since=<duration> (e.g. 24h, 7d) or ?from=&to= (RFC
// 3339) the ledger of that period read from the store.
func (p *Pipeline) serveStats(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var s ledger.Summary
	noPeriod := q.Get("since") == "" && q.Get("from") == "" && q.Get("to") == ""
	switch {
	case noPeriod && p.cfg.FleetSince != nil && p.cfg.Store != nil:
		since, err := p.cfg.FleetSince(r.Context())
		if err != nil {
			writeJSONError(w, http.StatusInternalServerError, "api_error", "reading the fleet's start: "+err.Error())
			return
		}
		if err := p.writer.Flush(r.Context()); err != nil {
			return // the caller left
		}
		if s, err = p.fleet.summary(r.Context(), p.cfg.Store, since, p.clock.Now()); err != nil {
			writeJSONError(w, http.StatusInternalServerError, "api_error", "reading the ledger: "+err.Error())
			return
		}
	case noPeriod:
		s = p.Summary()
	default:
		period, err := ledger.ParsePeriod(q.Get("since"), q.Get("from"), q.Get("to"), p.clock.Now())
		if err != nil {
			writeJSONError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		}
		if p.cfg.Store == nil {
			writeJSONError(w, http.StatusNotFound, "not_found_error", "llmfleet keeps no ledger to read a period from")
			return
		}
		if err := p.writer.Flush(r.Context()); err != nil {
			return // the caller left
		}
		if s, err = ledger.SummarizePeriod(r.Context(), p.cfg.Store, period); err != nil {
			writeJSONError(w, http.StatusInternalServerError, "api_error", "reading the ledger: "+err.Error())
			return
		}
	}
	if p.cfg.Clients != nil {
		s.Clients = p.cfg.Clients(r.Context())
	}
	if !p.admin.admits(r) {
		s = aggregatesOnly(s)
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
	w.Write(claudewire.Envelope(typ, msg, llmfleet.NewID("req_")))
}
