package proxy

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/ledger"
)

// This file applies a client's spend limits and zero data retention
// (Server.ClientRules) to a routed call, before it is sent: a client over
// a limit is refused 429 in the face's envelope, or taken only on the
// batch route; a zero-data-retention client's calls are never batched.

// clientRule is what the client's rules said of a call.
type clientRule struct {
	client string
	v      ledger.Verdict
}

// clientRules asks Server.ClientRules about the call's client before the
// call is routed (force is the route it forces): it refuses a call over
// a limit that rejects, and a zero-data-retention client's call that
// asks for the batch route; it marks the calls to keep off the batch
// route, or to take only on it, and says why (c.reason).
func (p pipeline) clientRules(r *http.Request, c *call, force llmfleet.Route) *refusal {
	s := p.s
	if s.ClientRules == nil {
		return nil
	}
	client := c.client.String()
	if c.client == nil {
		client = s.clientOf(p.f.traits().key.read(r))
	}
	if client == "" {
		return nil
	}
	v := s.ClientRules(r.Context(), client)
	bare := p.f.traits().bare
	if v.ZDR {
		if force == llmfleet.RouteBatch || c.async {
			e := p.f.says(zdrBatch, client)
			e.bare = bare
			return e
		}
		c.noBatch = true
		c.reason = "zdr: client " + client + " has zero data retention, and batches are not ZDR-eligible"
	}
	if v.Limit == "" {
		return nil
	}
	rule := &clientRule{client: client, v: v}
	switch {
	case !v.BatchOnly:
		return p.overLimit(rule, "llmfleet takes its calls again at "+stamp(v.Resets)+".")
	case force == llmfleet.RouteSync || force == llmfleet.RouteFlex:
		return p.overLimit(rule, "until "+stamp(v.Resets)+" only batched calls are taken: drop llmfleet-route: "+string(force)+".")
	}
	c.batchOnly, c.rule = true, rule
	c.reason = "batch-only: client " + client + " has reached its " + v.Limit + " limit of " + dollars(v.LimitUSD) +
		"; only batched calls are taken until " + stamp(v.Resets)
	return nil
}

// passLimit refuses, with proxy-held keys, a pass-through call to path
// that the upstream bills (a batch created, embeddings: face.billed) of a
// client over a spend limit, as clientRules refuses a routed call: one
// that rejects refuses all, one that takes only batches refuses all but
// batches. (Their cost is not in the ledger: see docs/ledger.md.)
func passLimit(s *Server, f mountedFace, r *http.Request, path string) *refusal {
	how := f.traits().billed
	if how == nil || s.ClientRules == nil {
		return nil
	}
	billed, batch := how(r.Method, path)
	if !billed {
		return nil
	}
	client := s.clientOf(f.traits().key.read(r))
	if client == "" {
		return nil
	}
	v := s.ClientRules(r.Context(), client)
	if v.Limit == "" || batch && v.BatchOnly {
		return nil
	}
	return pipeline{s, f}.overLimit(&clientRule{client: client, v: v}, "llmfleet takes its calls again at "+stamp(v.Resets)+".")
}

// routedByRules refuses a call taken only batched (clientRules) whose
// route, once decided, is not the batch route: its budget cannot be met
// by a batch.
func (p pipeline) routedByRules(c *call) *refusal {
	if !c.batchOnly || c.route == llmfleet.RouteBatch {
		return nil
	}
	return p.overLimit(c.rule, "until "+stamp(c.rule.v.Resets)+" only batched calls are taken, and this call's latency budget "+
		"cannot be met by a batch: send it with a budget a batch can meet (llmfleet-latency-budget-ms), or with llmfleet-route: batch.")
}

// overLimit returns the face's 429 for a client over its limit, then
// says what.
func (p pipeline) overLimit(rule *clientRule, then string) *refusal {
	v := rule.v
	period := "this UTC day"
	if v.Limit == "monthly-usd" {
		period = "this UTC month"
	}
	msg := fmt.Sprintf("Client %s has reached its %s limit of %s (paid %s %s); %s", rule.client, v.Limit,
		dollars(v.LimitUSD), dollars(v.SpentUSD), period, then)
	e := p.f.says(spendLimit, msg)
	e.bare, e.noRetry = p.f.traits().bare, true
	e.retryAfter = max(v.Resets.Sub(p.s.clock.Now()), time.Second)
	return e
}

// zdrBatchMessage is the refusal of a batch route asked for by a
// zero-data-retention client.
func zdrBatchMessage(client string) string {
	return "Client " + client + " has zero data retention: its calls are never batched (batches are not ZDR-eligible). " +
		"Send it without llmfleet-route: batch and Prefer: respond-async."
}

// setReason sets HeaderRouteReason to why the client's rules routed c,
// if they did (the SDK middlewares; the pipeline's serve says more).
func setReason(h http.Header, c *call) {
	if c.reason != "" {
		h.Set(HeaderRouteReason, c.reason)
	}
}

// setRefusalHeaders sets the headers a refusal carries besides its
// envelope: Retry-After and X-Should-Retry for a spend limit.
func setRefusalHeaders(h http.Header, e *refusal) {
	if e.retryAfter > 0 {
		h.Set("Retry-After", itoa(int64((e.retryAfter+time.Second-1)/time.Second)))
		h.Set("X-Should-Retry", "false")
	}
}

// stamp writes a reset time as the refusals give it.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// dollars writes an amount of USD: to the cent, or as it is below one.
func dollars(usd float64) string {
	if usd != 0 && usd < 0.01 && usd > -0.01 {
		return "$" + strconv.FormatFloat(usd, 'f', -1, 64)
	}
	return fmt.Sprintf("$%.2f", usd)
}
