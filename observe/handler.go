package observe

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
	"github.com/llmfleet/llmfleet/dashboard"
	"github.com/llmfleet/llmfleet/metrics"
	"github.com/llmfleet/llmfleet/proxy"
)

// Handler serves the observability endpoints in front of the proxy:
//
//	GET /llmfleet/v1/stats      the ledger summary as JSON: the store's whole ledger, or ?period=1h, 24h,
//	                            7d, 30d or all, or ?since=24h or ?from=&to=; without a store, since start
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

// serveStats serves GET /llmfleet/v1/stats: the summary of the period
// asked for (statsOf), which it names in "period".
func (p *Pipeline) serveStats(w http.ResponseWriter, r *http.Request) {
	s, period, e := p.statsOf(r)
	if e != nil {
		writeJSONError(w, e.status, e.typ, e.msg)
		return
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
	w.Write(withPeriod(body, period))
}

// writeJSONError answers in the Anthropic error envelope.
func writeJSONError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(claudewire.Envelope(typ, msg, llmfleet.NewID("req_")))
}
