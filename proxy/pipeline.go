package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
)

// pipeline is the routed-call pipeline of one face: it plans a call (its
// headers, its credential, its body, its route), then answers it on its
// route: a ticket at once, a batched answer (the caller parked on its
// connection or streamed pings while it waits), or the sync route.
// Everything a provider API does its own way is asked of the face.
type pipeline struct {
	s *Server
	f face
}

// serve serves a routed call.
func (p pipeline) serve(w http.ResponseWriter, r *http.Request) {
	r, span := p.s.spans.start(r, p.f)
	defer span.done()
	c, e := p.plan(r, true)
	c.span = span
	span.planned(c, e)
	if e == nil || !e.bare {
		w.Header().Set(HeaderRoute, string(c.route))
	}
	if why := c.reason; why != "" || e == nil {
		if why == "" {
			why = routeReason(p.s, c)
		}
		if why != "" {
			w.Header().Set(HeaderRouteReason, why)
		}
	}
	p.f.note(r, c, e)
	if e != nil {
		setRefusalHeaders(w.Header(), e)
		p.f.refuse(w, e)
		return
	}
	if p.s.log.Enabled(context.Background(), slog.LevelDebug) { // the arguments cost allocations
		p.s.log.Debug("routed", "route", c.route, "budget", c.budget, "async", c.async)
	}
	switch {
	case c.async:
		p.enqueue(w, r, c)
	case c.route == llmfleet.RouteBatch:
		p.batch(w, r, c)
	default:
		p.f.sync(w, r, c)
	}
}

// planRoute routes a call its face has parsed (c.req built): force, if
// not "", is the route it forces; a ticket's call keeps the batch route
// the tickets gave it, unstreamed (the stored answer is the endpoint's
// JSON); any other call takes the Submitter's plan.
func planRoute(s *Server, c *call, force llmfleet.Route) {
	if force != "" {
		c.route = force
	}
	switch {
	case c.async:
		c.stream = false
	case !c.forced && s.Submitter != nil:
		c.route = s.Submitter.Plan(c.budget, c.req)
	}
}

// plan plans a routed call: the route and budget its headers ask for,
// its credential, with tickets its Idempotency-Key and Prefer:
// respond-async, then its body and route (the face's), and, for the
// batch route, its request id. On error it still returns a call whose
// route is the one the error is reported under. The SDK middlewares plan
// with tickets only on the Anthropic face.
func (p pipeline) plan(r *http.Request, tickets bool) (*call, *refusal) {
	c := &call{route: llmfleet.RouteSync, arrived: p.s.clock.Now()}
	force, e := p.headers(r, c)
	if e != nil {
		return c, e
	}
	if e := p.f.admit(r, c); e != nil {
		return c, e
	}
	if tickets {
		if force, e = p.tickets(r, c, force); e != nil {
			return c, e
		}
	}
	if e := p.clientRules(r, c, force); e != nil {
		return c, e
	}
	if e := p.f.route(r, c, force); e != nil {
		return c, e
	}
	if e := p.routedByRules(c); e != nil {
		return c, e
	}
	if tickets && c.route == llmfleet.RouteBatch {
		p.ready(r, c)
	}
	return c, nil
}

// headers reads into c the budget and deadline a call asks for (its
// headers, its path prefix, else DefaultBudget) and returns the route it
// forces, if any.
func (p pipeline) headers(r *http.Request, c *call) (llmfleet.Route, *refusal) {
	t := p.f.traits()
	if e := unknownOwnHeader(r.Header, t.bare); e != nil {
		return "", e
	}
	var force llmfleet.Route
	if v := r.Header.Get(HeaderRoute); v != "" {
		for _, rt := range t.routes {
			if rt != "" && v == string(rt) {
				force = rt
			}
		}
		if force == "" {
			return "", &refusal{status: http.StatusBadRequest, typ: "invalid_request_error", param: "llmfleet-route",
				msg: "The llmfleet-route header must be " + routeNames(t.routes[:]) + ".", bare: t.bare}
		}
		c.forced = true
	}
	budget, given := llmfleet.BudgetFrom(r.Context())
	if v := r.Header.Get(HeaderBudget); v != "" {
		b, err := parseBudget(v)
		if err != nil {
			return "", &refusal{status: http.StatusBadRequest, typ: "invalid_request_error", param: "llmfleet-latency-budget-ms",
				msg: "The llmfleet-latency-budget-ms header must be a non-negative integer number of milliseconds.", bare: t.bare}
		}
		budget, given = b, true
	}
	if !given {
		budget = p.s.DefaultBudget
	}
	c.budget = budget
	hard, ok := hardDeadline(r.Header)
	if !ok {
		return "", &refusal{status: http.StatusBadRequest, typ: "invalid_request_error", param: "llmfleet-deadline", msg: badDeadline, bare: t.bare}
	}
	c.hard = hard
	return force, nil
}

// tickets reads the call's Idempotency-Key and Prefer: respond-async,
// which takes the batch route whatever the budget; it returns the route
// then forced.
func (p pipeline) tickets(r *http.Request, c *call, force llmfleet.Route) (llmfleet.Route, *refusal) {
	key, ok := idempotencyKey(r.Header)
	if !ok {
		return force, &refusal{status: http.StatusBadRequest, typ: "invalid_request_error", code: "invalid_idempotency_key",
			param: HeaderIdempotencyKey, msg: "The Idempotency-Key header must be 1 to 255 visible ASCII characters."}
	}
	c.idempotencyKey = key
	if !prefersAsync(r.Header) {
		return force, nil
	}
	if force != "" && force != llmfleet.RouteBatch {
		return force, &refusal{status: http.StatusBadRequest, typ: "invalid_request_error", param: "llmfleet-route",
			msg: "Prefer: respond-async needs the batch route, and llmfleet-route asks for " + string(force) + "."}
	}
	c.route, c.async = llmfleet.RouteBatch, true
	if _, ok := p.s.Submitter.(llmfleet.Tickets); !ok {
		return llmfleet.RouteBatch, noTicketsRefusal()
	}
	return llmfleet.RouteBatch, nil
}

// noTicketsRefusal answers an async call to a Submitter that cannot keep
// answers.
func noTicketsRefusal() *refusal {
	return &refusal{status: http.StatusBadRequest, typ: "invalid_request_error", param: "Prefer", msg: noTickets.msg}
}

// ready gives a call routed to batch its request id, known before its
// answer (derived from its Idempotency-Key, if any, so that a retry names
// the same request), and, with proxy-held keys, the name of the client
// that sent it, so that only that client reads it back.
func (p pipeline) ready(r *http.Request, c *call) {
	owner := ""
	if c.idempotencyKey != "" || p.s.Credentials != nil {
		owner = p.s.ownerName(p.f.traits().key.read(r))
	}
	c.req.ID = llmfleet.NewID("lfr_")
	if c.idempotencyKey != "" {
		c.req.ID, c.req.Retry = idempotentID(owner, c.idempotencyKey), true
	}
	if p.s.Credentials != nil {
		// Proxy-held keys: the upstream credential is shared, so the
		// request also remembers which client key sent it.
		if c.req.Header == nil {
			c.req.Header = make(http.Header)
		}
		c.req.Header.Set(clientHeader, owner)
	}
}

// enqueue accepts a routed call for batching and answers 202 with its
// ticket at once. The Submitter gets what is left of the budget, counted
// from the request's arrival (at least a nanosecond, should it be spent:
// the pool then flushes as soon as it can; nothing fails).
func (p pipeline) enqueue(w http.ResponseWriter, r *http.Request, c *call) {
	budget := c.budget
	if budget > 0 {
		budget = max(c.remaining(p.s.clock.Now()), time.Nanosecond)
	}
	id, err := p.s.Submitter.(llmfleet.Tickets).Enqueue(r.Context(), budget, c.req)
	if errors.Is(err, llmfleet.ErrNoStore) {
		p.f.refuse(w, noTicketsRefusal())
		return
	}
	if err != nil {
		logFailure(p.s.log, r.Context(), err)
		p.f.fail(r.Context(), w, c, err, false)
		return
	}
	h := w.Header()
	h.Set("Location", RequestsPath+id)
	h.Set("Preference-Applied", "respond-async")
	writeTicket(w, id, llmfleet.RequestQueued)
}

// batch pools a routed call into a batch and answers with its result: a
// caller that does not stream is parked on its connection alone if the
// face allows it (park), else waits in its handler; a streaming one
// is sent pings while it waits (streamPark). The Submitter gets what is
// left of the budget, counted from the request's arrival.
func (p pipeline) batch(w http.ResponseWriter, r *http.Request, c *call) {
	ctx := r.Context()
	if c.req.ID != "" {
		w.Header().Set(HeaderRequestID, c.req.ID) // with the first headers, a stream's too
	}
	t := p.f.traits()
	left := c.remaining(p.s.clock.Now())
	if t.spent {
		switch {
		case c.budget <= 0:
			left = c.budget // no budget: none to count down
		case left <= 0:
			p.f.refuse(w, spentRefusal(c))
			return
		}
	}
	if !c.stream {
		if t.parks && p.park(w, r, c, left) {
			return // answered later, on the connection taken over
		}
		resp, err := p.s.Submitter.SubmitBatch(ctx, left, c.req)
		p.answer(ctx, w, c, resp, err)
		return
	}
	sp := newStreamPark(w, p.s.clock, p.s.PingInterval, t.stream)
	resp, err := p.s.Submitter.SubmitBatch(ctx, left, c.req)
	begun := sp.stop()
	c.span.answered(resp, err)
	p.f.endStream(ctx, sp, c, resp, err, begun)
}

// answer answers a non-streaming batched call with what the Submitter
// returned. ctx is the caller's.
func (p pipeline) answer(ctx context.Context, w http.ResponseWriter, c *call, resp *llmfleet.Response, err error) {
	c.span.answered(resp, err)
	if err != nil {
		logFailure(p.s.log, ctx, err)
		p.f.fail(ctx, w, c, err, true)
		return
	}
	p.f.answer(ctx, w, c, resp)
}

// spentRefusal answers a batched call whose budget ran out before it
// could be handed to the Submitter (reading and checking its body took it
// all).
func spentRefusal(c *call) *refusal {
	return &refusal{status: http.StatusGatewayTimeout, typ: "timeout_error", noRetry: true,
		msg: "The request's latency budget of " + itoa(c.budget.Milliseconds()) + " ms ran out before llmfleet could queue it."}
}

// routeNames names routes as a refusal of the llmfleet-route header does:
// "sync or batch", "sync, flex or batch".
func routeNames(routes []llmfleet.Route) string {
	var s []string
	for _, r := range routes {
		if r != "" {
			s = append(s, string(r))
		}
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
