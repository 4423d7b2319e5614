package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiwire"
	"github.com/llmfleet/llmfleet/sse"
)

// DefaultOpenAIUpstream is the OpenAI API, the upstream of the OpenAI face
// when Server.OpenAIUpstream is nil.
const DefaultOpenAIUpstream = "https://api.openai.com"

// OpenAIPrefix is the path prefix of the OpenAI face: OPENAI_BASE_URL is
// http://HOST:PORT/openai/v1 (or http://HOST:PORT/budget/<ms>/openai/v1).
const OpenAIPrefix = "/openai"

// openAIProvider is the provider name of the OpenAI face's Requests.
const openAIProvider = "openai"

// openAICall is one routed call of the OpenAI face.
type openAICall struct {
	route        llmfleet.Route
	forced       bool
	budget       time.Duration
	arrived      time.Time
	endpoint     string // /v1/chat/completions, ...
	req          *llmfleet.Request
	model        string
	stream       bool
	includeUsage bool
	// owner, in proxy-held-key mode, names the client of a /v1/responses
	// call, whose answer's response is recorded as its own (see
	// openai_responses.go).
	owner string
	// async reports whether the caller asked for a ticket at once
	// (Prefer: respond-async) rather than for the answer.
	async bool
	// hard reports whether the budget is a hard deadline (HeaderDeadline).
	hard bool
}

// writeOpenAIError answers with the OpenAI error envelope.
func writeOpenAIError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	w.Write(openaiwire.Envelope(typ, code, param, msg))
}

// openAIError is an answer of the OpenAI face itself, in the envelope.
type openAIError struct {
	status                int
	typ, code, param, msg string
}

func (e *openAIError) write(w http.ResponseWriter) {
	writeOpenAIError(w, e.status, e.typ, e.code, e.param, e.msg)
}

// serveOpenAI serves the OpenAI face: /openai/v1/<path> is <path> of the
// OpenAI API; POST chat/completions, responses and embeddings are routed
// by budget, everything else passes through.
func (s *Server) serveOpenAI(w http.ResponseWriter, r *http.Request) {
	path, ok := strings.CutPrefix(r.URL.Path, OpenAIPrefix)
	if !ok || !strings.HasPrefix(path, "/v1/") {
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "", "Unknown request URL: "+r.Method+" "+r.URL.Path+".")
		return
	}
	client := ""
	if s.Credentials != nil {
		if s.OpenAICredentials == nil {
			writeOpenAIError(w, http.StatusForbidden, "permission_error", "", "",
				"The OpenAI face of this llmfleet is closed: it runs with proxy-held keys and holds none for OpenAI.")
			return
		}
		presented := credentialFrom(r.Header)
		up, ok := s.OpenAICredentials(presented)
		if !ok {
			writeOpenAIError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "",
				"Incorrect API key provided. This llmfleet admits clients by keys of its own.")
			return
		}
		client = s.ownerName(presented)
		r = r.WithContext(context.WithValue(r.Context(), upstreamCredential{}, up))
	}
	if r.Method == http.MethodPost && openaiwire.Routed(path) {
		s.serveOpenAIRouted(w, r, path, client)
		return
	}
	r2 := withPath(r, path, "")
	if s.Credentials != nil {
		switch {
		case openAIOwned(path):
			s.serveOpenAIOwned(w, r2, client)
			return
		case !openAIShared(r.Method, path):
			writeOpenAIError(w, http.StatusForbidden, "permission_error", "", "",
				"This llmfleet holds one OpenAI key for all its clients: "+r.Method+" "+path+
					" would reach what other clients made under it, so it is not passed on.")
			return
		}
	}
	fullDuplex(w)
	s.openAIRP.ServeHTTP(w, r2)
}

// openAIKey returns the key of a credential as OpenAI takes it: a bearer
// token.
func openAIKey(c llmfleet.Credential) llmfleet.Credential {
	if c.AuthToken == "" {
		return llmfleet.Credential{AuthToken: c.APIKey}
	}
	return llmfleet.Credential{AuthToken: c.AuthToken}
}

// planOpenAI reads a routed call: its route header, budget, body, model.
func (s *Server) planOpenAI(r *http.Request, endpoint string) (*openAICall, *openAIError) {
	c := &openAICall{arrived: s.clock.Now(), endpoint: endpoint, route: llmfleet.RouteSync}
	switch v := r.Header.Get(HeaderRoute); v {
	case "":
	case string(llmfleet.RouteSync), string(llmfleet.RouteFlex), string(llmfleet.RouteBatch):
		c.route, c.forced = llmfleet.Route(v), true
	default:
		return nil, &openAIError{http.StatusBadRequest, "invalid_request_error", "", "llmfleet-route", "The llmfleet-route header must be sync, flex or batch."}
	}
	budget, given := llmfleet.BudgetFrom(r.Context())
	if v := r.Header.Get(HeaderBudget); v != "" {
		b, err := parseBudget(v)
		if err != nil {
			return nil, &openAIError{http.StatusBadRequest, "invalid_request_error", "", "llmfleet-latency-budget-ms", "The llmfleet-latency-budget-ms header must be a non-negative integer number of milliseconds."}
		}
		budget, given = b, true
	}
	if !given {
		budget = s.DefaultBudget
	}
	c.budget = budget
	hard, ok := hardDeadline(r.Header)
	if !ok {
		return nil, &openAIError{http.StatusBadRequest, "invalid_request_error", "", "llmfleet-deadline", badDeadline}
	}
	c.hard = hard
	cred := credentialFrom(r.Header)
	if cred.AuthToken == "" {
		return nil, &openAIError{http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "",
			"You didn't provide an API key. Provide it in an Authorization header: Bearer YOUR_KEY."}
	}
	body, e := s.readBody(r)
	if e != nil {
		return nil, &openAIError{e.status, "invalid_request_error", "", "", e.msg}
	}
	var fields struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, &openAIError{http.StatusBadRequest, "invalid_request_error", "", "", "We could not parse the JSON body of your request."}
	}
	if fields.Model == "" {
		return nil, &openAIError{http.StatusBadRequest, "invalid_request_error", "missing_required_parameter", "model", "you must provide a model parameter"}
	}
	c.model, c.stream, c.includeUsage = fields.Model, fields.Stream, fields.StreamOptions.IncludeUsage
	h := http.Header{}
	for _, k := range []string{"OpenAI-Organization", "OpenAI-Project"} {
		if v := r.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	upstream := llmfleet.Credential{AuthToken: cred.AuthToken}
	if held, ok := r.Context().Value(upstreamCredential{}).(llmfleet.Credential); ok {
		upstream = openAIKey(held) // proxy-held keys: pooled under the proxy's key
	}
	c.req = &llmfleet.Request{Provider: openAIProvider, Credential: upstream,
		Header: h, Endpoint: endpoint, Body: body, Client: s.clientOf(cred)}
	noteModel(r.Context(), c.model)
	if !c.forced && s.Submitter != nil {
		c.route = s.Submitter.Plan(budget, c.req)
	}
	if c.route == llmfleet.RouteBatch && c.stream && endpoint != openaiwire.ChatCompletions {
		c.route = llmfleet.RouteSync // only chat streams are synthesised from a batch
	}
	if c.route == llmfleet.RouteFlex && !openaiwire.Flexible(endpoint) {
		c.route = llmfleet.RouteSync
	}
	return c, nil
}

// serveOpenAIRouted serves a routed call of the client named client
// ("" without proxy-held keys). With proxy-held keys, a /v1/responses
// call must not continue from another client's response (responseRefs).
func (s *Server) serveOpenAIRouted(w http.ResponseWriter, r *http.Request, endpoint, client string) {
	c, e := s.planOpenAI(r, endpoint)
	if e != nil {
		e.write(w)
		return
	}
	if s.Credentials != nil && isResponses(endpoint) {
		e, err := s.responseRefs(r.Context(), c.req.Body, client)
		if err != nil {
			s.openAIStateError(w, r, "owner lookup failed", err)
			return
		}
		if e != nil {
			e.write(w)
			return
		}
		c.owner = client
	}
	e = s.planOpenAIBatch(r, c)
	w.Header().Set(HeaderRoute, string(c.route))
	if e != nil {
		e.write(w)
		return
	}
	if a := accessOf(r.Context()); a != nil {
		a.mu.Lock()
		a.budget = c.budget
		a.mu.Unlock()
	}
	if c.async {
		s.serveOpenAIAsync(w, r, c)
		return
	}
	if c.route == llmfleet.RouteBatch {
		s.serveOpenAIBatch(w, r, c)
		return
	}
	s.fwd.serveOpenAISync(w, r, c)
}

// serveOpenAIBatch pools the call and answers from its batch: the body
// the endpoint would have answered, or for a streaming chat caller the
// chunks it would have been streamed as (": ping" comments while it
// waits).
func (s *Server) serveOpenAIBatch(w http.ResponseWriter, r *http.Request, c *openAICall) {
	if s.Submitter == nil {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "llmfleet-route", "This llmfleet does not batch.")
		return
	}
	if c.req.ID != "" {
		w.Header().Set(HeaderRequestID, c.req.ID) // with the first headers, a stream's too
	}
	type result struct {
		resp *llmfleet.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := s.Submitter.SubmitBatch(r.Context(), c.budget-s.clock.Now().Sub(c.arrived), c.req)
		done <- result{resp, err}
	}()
	var res result
	if c.stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		ping := s.PingInterval
		if ping <= 0 {
			ping = DefaultPingInterval
		}
		for waiting := true; waiting; {
			tick, stop := s.after(ping)
			select {
			case res = <-done:
				waiting = false
			case <-tick:
				w.Write(sse.AppendComment(nil, "ping"))
				http.NewResponseController(w).Flush()
			}
			stop()
		}
		if res.err != nil {
			_, _, _, msg := openAIFailure(res.err)
			b, _ := json.Marshal(map[string]any{"error": json.RawMessage(errorObject(res.err, msg))})
			w.Write(sse.AppendEvent(nil, "", b))
			return
		}
		out, err := openaiwire.AppendChunks(nil, res.resp.Body, c.includeUsage)
		if err != nil {
			w.Write(sse.AppendEvent(nil, "", openaiwire.Envelope("api_error", "", "", "The batch answer could not be streamed.")))
			return
		}
		w.Write(out)
		return
	}
	res = <-done
	if res.err != nil {
		s.logFailure(r.Context(), res.err)
		status, body := openAIErrorAnswer(res.err)
		writeOpenAIBody(w, status, body)
		return
	}
	if c.owner != "" {
		s.recordResponse(r.Context(), c.owner, res.resp.Body)
	}
	w.Header().Set("Content-Type", "application/json")
	if res.resp.RequestID != "" {
		w.Header().Set(HeaderRequestID, res.resp.RequestID)
	}
	if res.resp.BatchID != "" {
		w.Header().Set(HeaderBatchID, res.resp.BatchID)
	}
	w.Header().Set(HeaderRoute, string(res.resp.Route))
	w.Header().Set("Content-Length", itoa(int64(len(res.resp.Body))))
	w.WriteHeader(http.StatusOK)
	w.Write(res.resp.Body)
}

// openAIFailure returns the status, type, code and message a batched call
// that failed with err is answered with, in the sync API's terms.
func openAIFailure(err error) (status int, typ, code, msg string) {
	var pe *llmfleet.Error
	switch {
	case errors.As(err, &pe):
		return pe.StatusCode, pe.Type, "", pe.Message
	case errors.Is(err, llmfleet.ErrUpstreamTimeout):
		return http.StatusGatewayTimeout, "timeout_error", "", "The provider did not answer llmfleet's call within its upstream timeout."
	case errors.Is(err, llmfleet.ErrBudgetExceeded):
		return http.StatusGatewayTimeout, "timeout_error", "", "The request's latency budget ran out before its batch answered."
	case isStoreFailure(err):
		return http.StatusServiceUnavailable, "server_error", "", storeFailureMessage(err)
	case errors.Is(err, llmfleet.ErrBatchExpired):
		return http.StatusInternalServerError, "server_error", "batch_expired", "This request could not be executed before the completion window expired."
	case errors.Is(err, llmfleet.ErrBatchCanceled):
		return http.StatusInternalServerError, "server_error", "batch_cancelled", "This request was cancelled before it ran."
	case errors.Is(err, llmfleet.ErrIDConflict):
		return http.StatusBadRequest, "invalid_request_error", "idempotency_key_reused",
			"This Idempotency-Key was already used for a different request (another body or another key): a retry must repeat its request exactly."
	}
	return http.StatusInternalServerError, "server_error", "", "llmfleet could not answer the request: " + err.Error()
}

// errorObject returns the inner error object of err's envelope.
func errorObject(err error, msg string) []byte {
	var pe *llmfleet.Error
	if errors.As(err, &pe) {
		if e, ok := openaiwire.ParseError(pe.Body); ok {
			b, _ := json.Marshal(e)
			return b
		}
	}
	_, typ, code, _ := openAIFailure(err)
	e := openaiwire.APIError{Message: msg, Type: typ}
	if code != "" {
		e.Code = &code
	}
	b, _ := json.Marshal(e)
	return b
}

// after returns a channel closed after d on the Server's clock, and a
// func that stops it.
func (s *Server) after(d time.Duration) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	t := s.clock.AfterFunc(d, func() { close(ch) })
	return ch, func() { t.Stop() }
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// openAIUpstreamURL returns the OpenAI upstream's base URL.
func openAIUpstreamURL(u *url.URL) *url.URL {
	if u != nil {
		return u
	}
	d, _ := url.Parse(DefaultOpenAIUpstream)
	return d
}
