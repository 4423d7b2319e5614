package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/llmfleet/llmfleet"
)

// syncObserver hands the ledger entries of the sync route's calls to the
// embedding application (Server.Observe), reports their upstream failures
// (Server.UpstreamError) and teaches the Submitter's cost model the usage
// they read (a llmfleet.CacheObserver). It holds only the hooks: a call's
// own state is its syncCall's.
type syncObserver struct {
	observe       func(llmfleet.LedgerEntry)
	upstreamError func(kind string)
	provider      string
	cache         llmfleet.CacheObserver // nil: the Submitter learns nothing
	clock         llmfleet.Clock
}

// observing reports whether the sync route is observed.
func (o *syncObserver) observing() bool { return o.observe != nil || o.upstreamError != nil }

// failed reports an upstream failure of kind (see Server.UpstreamError).
func (o *syncObserver) failed(kind string) {
	if o.upstreamError != nil {
		o.upstreamError(kind)
	}
}

// failure reports an observed call whose upstream call failed before any
// response: "caller_canceled" if the caller left, else an api_error (the
// 502 the caller gets) and a network upstream error. Either may be
// billed, its usage estimated, if its request was written upstream: the
// upstream may have carried it out (a connection lost after the write);
// not if it never was (a refused dial), nor while it waited to be sent
// again (its answers so far were errors, not billed).
func (o *syncObserver) failure(r *http.Request) {
	sc := observedCallOf(r)
	if sc == nil {
		return
	}
	outcome := "caller_canceled"
	if r.Context().Err() == nil {
		o.failed("network")
		outcome = "api_error"
	}
	if sc.inFlight() {
		o.cut(sc, "", llmfleet.Usage{}, outcome)
		return
	}
	o.done(sc, "", llmfleet.Usage{}, outcome)
}

// cut reports a sync call cut after it went upstream (its hard deadline,
// the upstream timeout, its caller leaving), which the upstream may bill:
// with u, the usage read off its answer so far, or, if none was, an
// estimate from its body's size (LedgerEntry.Estimated).
func (o *syncObserver) cut(sc *syncCall, model string, u llmfleet.Usage, outcome string) {
	estimated := u == (llmfleet.Usage{})
	if estimated {
		n := int64(len(sc.body))
		if sc.body == nil {
			n = sc.sentBytes.Load()
		}
		u = llmfleet.EstimatedUsage(n)
	}
	o.report(sc, model, u, outcome, estimated)
}

// done hands the ledger entry of a sync call to Observe, once.
func (o *syncObserver) done(sc *syncCall, model string, u llmfleet.Usage, outcome string) {
	o.report(sc, model, u, outcome, false)
}

// report is done, the usage estimated or not.
func (o *syncObserver) report(sc *syncCall, model string, u llmfleet.Usage, outcome string, estimated bool) {
	sc.once.Do(func() {
		if o.observe == nil {
			return
		}
		now := o.clock.Now()
		if model == "" && sc.body != nil {
			var m struct {
				Model string `json:"model"`
			}
			_ = json.Unmarshal(sc.body, &m)
			model = m.Model
		}
		e := llmfleet.LedgerEntry{
			Time:      now,
			Provider:  o.provider,
			Model:     model,
			Route:     llmfleet.RouteSync,
			Outcome:   outcome,
			Usage:     u,
			Latency:   now.Sub(sc.start),
			Budget:    sc.budget,
			Estimated: estimated,
		}
		e.BudgetMet = llmfleet.BudgetMet(outcome == "ok", e.Latency, sc.budget)
		sc.mu.Lock()
		if sc.held {
			sc.pending, sc.hasPending = e, true
			sc.mu.Unlock()
			return
		}
		sc.mu.Unlock()
		o.hand(sc, &e)
	})
}

// hand gives e, the entry of sc, to Observe, with what its route's cache
// writes cost (LedgerEntry.MissUSD) and its client's name.
func (o *syncObserver) hand(sc *syncCall, e *llmfleet.LedgerEntry) {
	o.noteCache(sc, e)
	e.Client = sc.client.String()
	sc.span.entry(e)
	o.observe(*e)
}

// noteCache teaches the Submitter's cost model the usage of a sync call
// whose body was read, and records in its entry what its route's cache
// writes cost (LedgerEntry.MissUSD).
func (o *syncObserver) noteCache(sc *syncCall, e *llmfleet.LedgerEntry) {
	body := sc.body
	if body == nil && sc.teed != nil {
		body = sc.teed.kept()
	}
	if o.cache == nil || body == nil || e.Outcome != "ok" || !bytes.Contains(body, cacheControlKey) {
		return
	}
	req := &llmfleet.Request{Provider: o.provider, Credential: sc.cred, Body: body}
	e.MissUSD = o.cache.ObserveCache(req, llmfleet.RouteSync, e.Usage, e.Time)
}

// release hands the entry held back, if any, to Observe, reading it
// first off the tap that ended meanwhile.
func (o *syncObserver) release(sc *syncCall) {
	sc.mu.Lock()
	e, held, t := sc.pending, sc.hasPending, sc.tap
	sc.held, sc.pending, sc.hasPending, sc.tap = false, llmfleet.LedgerEntry{}, false, nil
	sc.mu.Unlock()
	if t != nil {
		t.report()
	}
	if held {
		o.hand(sc, &e)
	}
}
