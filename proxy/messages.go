package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llmfleet/llmfleet"
)

// call is a create-message call once routed.
type call struct {
	route  llmfleet.Route
	budget time.Duration
	// arrived is when the proxy got the request: its budget counts from
	// then.
	arrived time.Time
	// cred is the upstream credential, set when it differs from the one
	// the client presented (proxy-held-key mode).
	cred *llmfleet.Credential
	// body is the request body, nil if routing did not need to read it.
	body []byte
	// req is the Request for the Submitter (batch route only).
	req *llmfleet.Request
	// stream reports whether the caller asked for a stream (batch route only).
	stream bool
	// idempotencyKey is the caller's Idempotency-Key, if any.
	idempotencyKey string
	// async reports whether the caller asked for a ticket at once
	// (Prefer: respond-async) rather than for the answer.
	async bool
	// hard reports whether the budget is a hard deadline (HeaderDeadline).
	hard bool
	// client names the caller in the ledger (see clientOf).
	client *clientName
}

// plan routes a create-message call: it reads the route and budget the
// request asks for, checks the credential and, when routing needs it, reads
// the body and asks the Submitter. On error it still returns a call whose
// route is the one the error is reported under.
func (s *Server) plan(r *http.Request) (*call, *apiError) {
	c := &call{route: llmfleet.RouteSync, arrived: s.clock.Now()}
	force, e := s.planHeaders(r, c)
	if e != nil {
		return c, e
	}
	budget := c.budget

	cred := credentialFrom(r.Header)
	if s.Observe != nil || s.Submitter != nil {
		c.client = s.clientNameOf(r, cred) // the key presented, not the upstream one
	}
	if s.Credentials != nil {
		up, ok := s.Credentials(cred)
		if !ok {
			return c, unauthorized
		}
		cred, c.cred = up, &up
	}

	key, ok := idempotencyKey(r.Header)
	if !ok {
		return c, invalidRequest("The Idempotency-Key header must be 1 to 255 visible ASCII characters.")
	}
	c.idempotencyKey = key

	if prefersAsync(r.Header) {
		if force == llmfleet.RouteSync {
			return c, invalidRequest("Prefer: respond-async needs the batch route, and llmfleet-route asks for sync.")
		}
		c.route, c.async, force = llmfleet.RouteBatch, true, llmfleet.RouteBatch
		if _, ok := s.Submitter.(llmfleet.Tickets); !ok {
			return c, noTickets
		}
	}

	if force == llmfleet.RouteSync || force == "" && (budget <= 0 || s.Submitter == nil) {
		return c, nil
	}
	if force == llmfleet.RouteBatch {
		c.route = llmfleet.RouteBatch
		if s.Submitter == nil {
			return c, &apiError{http.StatusServiceUnavailable, "api_error", "llmfleet has no dispatcher to batch the request"}
		}
	}

	if cred.IsZero() {
		// The API refuses a call without a key before it looks at the
		// body; a batched one must not get as far as a pool.
		return c, missingKey
	}
	body, e := s.readBody(r)
	if e != nil {
		return c, e
	}
	c.body = body
	req := &llmfleet.Request{
		Provider:   s.Provider,
		Credential: cred,
		Header:     passHeaders(r.Header),
		Body:       body,
		Client:     c.client.String(),
	}
	if force == "" {
		if s.ToolResultsSync && lastUserHasToolResult(body) {
			return c, nil
		}
		// Routed by what is left of the budget once the body is read (at
		// least a nanosecond: a budget was given).
		c.route = s.Submitter.Plan(max(s.remaining(c), time.Nanosecond), req)
		if c.route != llmfleet.RouteBatch {
			c.route = llmfleet.RouteSync
			return c, nil
		}
	}
	return c, s.batchRequest(r, c, req)
}

// planHeaders reads into c the budget and deadline a create-message call
// asks for (its headers, its path prefix, else DefaultBudget) and
// returns the route it forces, if any.
func (s *Server) planHeaders(r *http.Request, c *call) (llmfleet.Route, *apiError) {
	var force llmfleet.Route
	switch v := r.Header.Get(HeaderRoute); v {
	case "":
	case string(llmfleet.RouteSync), string(llmfleet.RouteBatch):
		force = llmfleet.Route(v)
	default:
		return "", invalidRequest("The llmfleet-route header must be sync or batch.")
	}
	budget, given := llmfleet.BudgetFrom(r.Context())
	if v := r.Header.Get(HeaderBudget); v != "" {
		b, err := parseBudget(v)
		if err != nil {
			return "", invalidRequest("The llmfleet-latency-budget-ms header must be a non-negative integer number of milliseconds.")
		}
		budget, given = b, true
	}
	if !given {
		budget = s.DefaultBudget
	}
	c.budget = budget
	hard, ok := hardDeadline(r.Header)
	if !ok {
		return "", invalidRequest(badDeadline)
	}
	c.hard = hard
	return force, nil
}

// batchRequest readies req, the Request of c, a call routed to batch,
// for the Submitter: its body checked and stripped of "stream", its id.
func (s *Server) batchRequest(r *http.Request, c *call, req *llmfleet.Request) *apiError {
	params, stream, e := batchBody(req.Body)
	if e != nil {
		return e
	}
	req.Body = params
	req.ID = llmfleet.NewID("lfr_") // known before the answer, for the stream's headers
	if c.idempotencyKey != "" {
		req.ID, req.Retry = idempotentID(s.ownerName(credentialFrom(r.Header)), c.idempotencyKey), true
	}
	if s.Credentials != nil {
		// Proxy-held keys: the upstream credential is shared, so the
		// request also remembers which client key sent it.
		if req.Header == nil {
			req.Header = make(http.Header)
		}
		req.Header.Set(clientHeader, s.ownerName(credentialFrom(r.Header)))
	}
	c.req, c.stream, c.body = req, stream, nil // a parked request holds one copy of its body
	return nil
}

// readBody reads a request body of at most MaxBodyBytes, within the body
// read timeout and the budget of bytes in unfinished bodies.
func (s *Server) readBody(r *http.Request) ([]byte, *apiError) {
	if r.Body == nil {
		return nil, nil
	}
	if r.ContentLength > MaxBodyBytes {
		return nil, tooLarge
	}
	if r.ContentLength > 0 {
		// The length is known (and net/http holds the client to it): read
		// into a buffer of exactly that size, which a parked request keeps.
		if !s.bodies.reserve(r.ContentLength) {
			return nil, bodiesFull
		}
		defer s.bodies.release(r.ContentLength)
		b := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, readFailed(r, err)
		}
		bodyRead(r)
		return b, nil
	}
	cr := &countedReader{r: io.LimitReader(r.Body, MaxBodyBytes+1), b: &s.bodies}
	defer func() { s.bodies.release(cr.held) }()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(cr); err != nil {
		if errors.Is(err, errBodiesFull) {
			return nil, bodiesFull
		}
		return nil, readFailed(r, err)
	}
	if buf.Len() > MaxBodyBytes {
		return nil, tooLarge
	}
	bodyRead(r)
	return buf.Bytes(), nil
}

// passHeaders returns the provider headers a batched request carries into
// its batch: every anthropic-* header (anthropic-version, anthropic-beta,
// ...). Requests whose such headers differ are never pooled together.
func passHeaders(h http.Header) http.Header {
	var out http.Header
	for k, v := range h {
		if len(k) > 10 && strings.EqualFold(k[:10], "anthropic-") {
			if out == nil {
				out = make(http.Header)
			}
			out[http.CanonicalHeaderKey(k)] = v
		}
	}
	return out
}

// serveMessages serves POST /v1/messages.
func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request) {
	c, e := s.plan(r)
	w.Header().Set(HeaderRoute, string(c.route))
	noteCall(r, c)
	if e != nil {
		writeAPIError(w, e)
		return
	}
	s.log.Debug("routed", "route", c.route, "budget", c.budget, "async", c.async)
	if c.async {
		s.serveAsync(w, r, c)
		return
	}
	if c.route == llmfleet.RouteBatch {
		s.serveBatch(w, r, c)
		return
	}
	s.serveSync(w, r, c)
}

// serveSync sends a routed call straight upstream through the reverse
// proxy. A call with a budget has its body read whole first (as routing
// may have done), so that it can be sent again (syncbudget.go). The
// budget does not cut the call unless it is a hard deadline (c.hard);
// the upstream timeout does (deadline.go).
func (s *Server) serveSync(w http.ResponseWriter, r *http.Request, c *call) {
	if c.budget > 0 && c.body == nil {
		body, e := s.readBody(r)
		if e != nil {
			writeAPIError(w, e)
			return
		}
		if body == nil {
			body = []byte{}
		}
		c.body = body
		noteCall(r, c)
	}
	sc := s.fwd.newSyncCall(c)
	if sc != nil {
		sc.cred = credentialFrom(r.Header)
		if c.cred != nil {
			sc.cred = *c.cred
		}
	}
	if sc != nil || c.body != nil || c.cred != nil {
		ctx := r.Context()
		if c.cred != nil {
			ctx = context.WithValue(ctx, upstreamCredential{}, *c.cred)
		}
		if sc != nil {
			ctx = context.WithValue(ctx, syncCallKey{}, sc)
			hard := time.Duration(0)
			if c.hard && c.budget > 0 {
				if hard = sc.deadline.Sub(s.clock.Now()); hard <= 0 {
					s.fwd.callCut(w, r, sc, callCutHard, false)
					return
				}
			}
			ctx, sc.bound = s.bound(ctx, hard, s.upstreamTimeout)
			defer sc.bound.release()
		}
		r = r.WithContext(ctx)
		if c.body != nil {
			r.Body = io.NopCloser(bytes.NewReader(c.body))
			r.ContentLength = int64(len(c.body))
		} else if sc != nil && r.Body != nil && r.Body != http.NoBody {
			r.Body = countedBody{r.Body, &sc.sentBytes}
		}
	}
	if c.body == nil {
		fullDuplex(w)
		if sc != nil && r.Body != nil {
			if _, ok := s.Submitter.(llmfleet.CacheObserver); ok && s.Observe != nil {
				// Kept as it streams upstream, for the cost model to
				// learn the prompt cache's state from the answer.
				r.Body = sc.tee(r.Body)
			}
		}
	}
	if sc == nil || s.Observe == nil {
		s.rp.ServeHTTP(w, r)
		return
	}
	// The answer is flushed to the caller before its ledger entry is
	// priced, counted and queued for the store: none of that is the
	// caller's wait.
	sc.hold()
	defer s.fwd.obs.release(sc)
	s.rp.ServeHTTP(w, r)
	flushWhole(w)
}

// countedBody is a request body that counts the bytes read from it.
type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// remaining returns what is left of c's budget now, counted from the
// request's arrival; it is 0 or less once the budget is spent.
func (s *Server) remaining(c *call) time.Duration {
	return c.budget - s.clock.Now().Sub(c.arrived)
}

// fullDuplex lets a handler that has not read its request body yet keep
// reading it after the response has begun. net/http otherwise closes the
// body at the first response write, which now and then cuts a streamed
// response that the reverse proxy is still copying while the upstream
// request is being sent (golang/go#40747).
func fullDuplex(w http.ResponseWriter) {
	_ = http.NewResponseController(w).EnableFullDuplex()
}
