package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"

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

// writeOpenAIError answers with the OpenAI error envelope.
func writeOpenAIError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	w.Write(openaiwire.Envelope(typ, code, param, msg))
}

// openAIFace is the OpenAI API's face, under OpenAIPrefix: chat
// completions, responses and embeddings through the routed-call pipeline,
// the Files and Batches APIs by owner (openai_owners.go), the rest passed
// upstream as allowed; its answers, errors and streams in OpenAI's
// shapes.
type openAIFace struct {
	s *Server
	// endpoint is the routed endpoint called (/v1/chat/completions, ...).
	endpoint string
	// client names the client in proxy-held-key mode ("" otherwise).
	client string
	// sdk says the call comes through the SDK middleware: the proxy
	// keeps no responses of its clients there.
	sdk bool
}

// prefix: /openai/v1/<path> is <path> of the OpenAI API.
func (f openAIFace) prefix() (mount, api string) { return OpenAIPrefix, "/v1/" }

// hold maps the client's key to the OpenAI key the proxy holds for it
// (Server.OpenAICredentials); without one the face is closed.
func (f openAIFace) hold(presented llmfleet.Credential) (llmfleet.Credential, *refusal) {
	return holdWith(f, f.s.OpenAICredentials, presented)
}

// forCall returns the face for a call to path by the client named client.
func (f openAIFace) forCall(path, client string) mountedFace {
	f.endpoint, f.client = path, client
	return f
}

// routed: POST chat/completions, responses and embeddings are routed by
// budget; everything else passes through.
func (f openAIFace) routed(method, path string) bool {
	return method == http.MethodPost && openaiwire.Routed(path)
}

// upstream is the OpenAI face's reverse proxy.
func (f openAIFace) upstream() http.Handler { return f.s.fwd.to(OpenAIPrefix).rp }

// openAIKey returns the key of a credential as OpenAI takes it: a bearer
// token.
func openAIKey(c llmfleet.Credential) llmfleet.Credential {
	if c.AuthToken == "" {
		return llmfleet.Credential{AuthToken: c.APIKey}
	}
	return llmfleet.Credential{AuthToken: c.AuthToken}
}

// traits: sync, flex or batch may be forced; refusals of a call's headers
// and body go without the route header; a batched caller waits in its
// handler, a streaming one on ": ping" comments, the stream begun at once.
func (f openAIFace) traits() faceTraits {
	return faceTraits{routes: [3]llmfleet.Route{llmfleet.RouteSync, llmfleet.RouteFlex, llmfleet.RouteBatch}, bare: true,
		stream: streamShape{eager: true, ping: openAIPing, begin: openAIStreamHead}, key: openAIKeys(), billed: openAIBilled}
}

// openAIKeys is the way of the OpenAI API's credentials: a bearer token
// (Authorization), a key given as x-api-key sent on as one.
func openAIKeys() keyWay {
	return keyWay{read: headerCredential, form: openAIKey,
		set: func(out *http.Request, c llmfleet.Credential) { setCredential(out.Header, openAIKey(c)) }}
}

// openAIPing appends the comment a waiting chat stream is sent.
func openAIPing(b []byte) []byte { return sse.AppendComment(b, "ping") }

// openAIStreamHead sets the headers of a chat stream synthesised from a
// batch.
func openAIStreamHead(h http.Header, _ bool) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
}

// admit checks that the call presents a key, as a bearer token.
func (f openAIFace) admit(r *http.Request, _ *call) *refusal {
	if headerCredential(r).AuthToken == "" {
		e := f.says(noKey, "")
		e.bare = true
		return e
	}
	return nil
}

// route reads the body (its model, stream and stream options), builds the
// Request and routes it: forced, a ticket's (batch, without "stream": the
// stored answer is the endpoint's JSON), else by the Submitter's plan.
// Only chat streams are synthesised from a batch, and only some
// endpoints have a flex tier. With proxy-held keys, a /v1/responses call
// must not continue from another client's response (responseRefs).
func (f openAIFace) route(r *http.Request, c *call, force llmfleet.Route) *refusal {
	s := f.s
	c.endpoint = f.endpoint
	if e := f.parse(r, c); e != nil {
		return e
	}
	planRoute(s, c, force)
	if !c.async && c.route == llmfleet.RouteBatch && c.stream && c.endpoint != openaiwire.ChatCompletions {
		c.route = llmfleet.RouteSync // only chat streams are synthesised from a batch
	}
	if !c.async && c.route == llmfleet.RouteFlex && !openaiwire.Flexible(c.endpoint) {
		c.route = llmfleet.RouteSync
	}
	if !f.sdk && s.Credentials != nil {
		if e := openAIHeldRefs(f, r, c.req.Body); e != nil {
			e.bare = true
			return e
		}
		c.owner = f.client
	}
	if c.route == llmfleet.RouteBatch && s.Submitter == nil {
		return &refusal{status: http.StatusBadRequest, typ: "invalid_request_error", param: "llmfleet-route", msg: "This llmfleet does not batch."}
	}
	if c.endpoint == openaiwire.Responses {
		// Admitted: a background response it continues from is ledgered
		// first, if no read has been.
		settleChained(s, f.upstream(), r, c.req.Body)
	}
	return nil
}

// openAIHeldRefs returns, with proxy-held keys, the refusal of a call of
// f whose body names what is not the client's: a response it continues
// from, a conversation, an input item (responseRefs), a file, a
// container, an item referred to (refs).
func openAIHeldRefs(f openAIFace, r *http.Request, body []byte) *refusal {
	e, err := bookOf(f.s).responseRefs(r.Context(), body, f.client)
	if err != nil {
		logStateError(f.s.log, r, "owner lookup failed", err)
		e = f.says(stateFailed, "")
	}
	if e != nil {
		return e
	}
	return heldRefusal(f.s, r, f, f.client, body)
}

// parse reads the call's body and builds its Request.
func (f openAIFace) parse(r *http.Request, c *call) *refusal {
	s := f.s
	body, e := s.bodies.read(r)
	if e != nil {
		return &refusal{status: e.status, typ: "invalid_request_error", msg: e.msg, bare: true}
	}
	var fields struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	if err := json.Unmarshal(body, &fields); err != nil {
		return &refusal{status: http.StatusBadRequest, typ: "invalid_request_error", msg: "We could not parse the JSON body of your request.", bare: true}
	}
	if fields.Model == "" {
		return &refusal{status: http.StatusBadRequest, typ: "invalid_request_error", code: "missing_required_parameter", param: "model",
			msg: "you must provide a model parameter", bare: true}
	}
	c.model, c.stream, c.includeUsage = fields.Model, fields.Stream, fields.StreamOptions.IncludeUsage
	h := http.Header{}
	cred := headerCredential(r)
	upstream := llmfleet.Credential{AuthToken: cred.AuthToken}
	if held, ok := r.Context().Value(upstreamCredential{}).(llmfleet.Credential); ok {
		upstream = openAIKey(held) // proxy-held keys: pooled under the proxy's key, in its account
	} else {
		for _, k := range openAIAccountHeaders {
			if v := r.Header.Get(k); v != "" {
				h.Set(k, v)
			}
		}
	}
	c.req = &llmfleet.Request{Provider: openAIProvider, Credential: upstream,
		Header: h, Endpoint: c.endpoint, Body: body, Client: s.clientOf(cred), NoBatch: c.noBatch, BatchOnly: c.batchOnly}
	noteModel(r.Context(), c.model)
	return nil
}

// note records the budget of a call planned for the access log (its
// model was noted as its body was read).
func (f openAIFace) note(r *http.Request, c *call, e *refusal) {
	if a := accessOf(r.Context()); a != nil && e == nil {
		a.mu.Lock()
		a.budget = c.budget
		a.mu.Unlock()
	}
}

// refuse answers e in OpenAI's error envelope.
func (f openAIFace) refuse(w http.ResponseWriter, e *refusal) {
	writeOpenAIError(w, e.status, e.typ, e.code, e.param, e.msg)
}

// sync sends a call routed sync or flex upstream (openai_sync.go).
func (f openAIFace) sync(w http.ResponseWriter, r *http.Request, c *call) {
	f.s.fwd.serveOpenAISync(w, r, c)
}

// endStream ends a chat stream synthesised from a batch: its chunks, or
// an error chunk.
func (f openAIFace) endStream(ctx context.Context, p *streamPark, c *call, resp *llmfleet.Response, err error, _ bool) {
	w := p.w
	if err != nil {
		_, _, _, msg := openAIFailure(err)
		b, _ := json.Marshal(map[string]any{"error": json.RawMessage(errorObject(err, msg))})
		w.Write(sse.AppendEvent(nil, "", b))
		return
	}
	bookOf(f.s).recordAnswer(ctx, c.owner, resp.Body, openAIAnswerIDs) // as a waiting call's (answer)
	out, err := openaiwire.AppendChunks(nil, resp.Body, c.includeUsage)
	if err != nil {
		w.Write(sse.AppendEvent(nil, "", openaiwire.Envelope("api_error", "", "", "The batch answer could not be streamed.")))
		return
	}
	w.Write(out)
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

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// openAIUpstreamURL returns the OpenAI upstream's base URL.
func openAIUpstreamURL(u *url.URL) *url.URL {
	if u != nil {
		return u
	}
	d, _ := url.Parse(DefaultOpenAIUpstream)
	return d
}
