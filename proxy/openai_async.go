package proxy

import (
	"errors"
	"net/http"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/openaiwire"
)

// This file gives the OpenAI face what the Anthropic face has on its
// batch route: request ids known before the answer, Idempotency-Key
// (idempotency.go), Prefer: respond-async tickets (async.go), and the
// answers of those tickets in OpenAI's shapes.

// OpenAIRequestsPath is the tickets API under the OpenAI face's base URL
// (GET OpenAIRequestsPath + id is GET RequestsPath + id with refusals in
// OpenAI's envelope), for clients that know only that base URL.
const OpenAIRequestsPath = OpenAIPrefix + "/v1/llmfleet/requests/"

// planOpenAIBatch reads what a routed call of the OpenAI face asks of the
// batch route: Idempotency-Key and Prefer: respond-async (which takes the
// batch route whatever the budget, and drops "stream": the stored answer
// is the endpoint's JSON). A batched call then gets its request id,
// derived from its Idempotency-Key if it has one, and, with proxy-held
// keys, the name of the client that sent it, so that only that client
// reads it back.
func (s *Server) planOpenAIBatch(r *http.Request, c *openAICall) *openAIError {
	key, ok := idempotencyKey(r.Header)
	if !ok {
		return &openAIError{http.StatusBadRequest, "invalid_request_error", "invalid_idempotency_key", HeaderIdempotencyKey,
			"The Idempotency-Key header must be 1 to 255 visible ASCII characters."}
	}
	if prefersAsync(r.Header) {
		if v := r.Header.Get(HeaderRoute); v != "" && v != string(llmfleet.RouteBatch) {
			return &openAIError{http.StatusBadRequest, "invalid_request_error", "", "llmfleet-route",
				"Prefer: respond-async needs the batch route, and llmfleet-route asks for " + v + "."}
		}
		if _, ok := s.Submitter.(llmfleet.Tickets); !ok {
			return &openAIError{http.StatusBadRequest, "invalid_request_error", "", "Prefer", noTickets.msg}
		}
		c.route, c.async, c.stream = llmfleet.RouteBatch, true, false
	}
	if c.route != llmfleet.RouteBatch {
		return nil
	}
	presented := credentialFrom(r.Header)
	c.req.ID = llmfleet.NewID("lfr_")
	if key != "" {
		c.req.ID, c.req.Retry = idempotentID(s.ownerName(presented), key), true
	}
	if s.Credentials != nil {
		if c.req.Header == nil {
			c.req.Header = make(http.Header)
		}
		c.req.Header.Set(clientHeader, s.ownerName(presented))
	}
	return nil
}

// serveOpenAIAsync accepts a routed call for batching and answers 202
// with its ticket at once, as serveAsync does on the Anthropic face.
func (s *Server) serveOpenAIAsync(w http.ResponseWriter, r *http.Request, c *openAICall) {
	budget := c.budget
	if budget > 0 {
		budget = max(c.budget-s.clock.Now().Sub(c.arrived), time.Nanosecond)
	}
	id, err := s.Submitter.(llmfleet.Tickets).Enqueue(r.Context(), budget, c.req)
	if errors.Is(err, llmfleet.ErrNoStore) {
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "Prefer", noTickets.msg)
		return
	}
	if err != nil {
		s.logFailure(r.Context(), err)
		status, body := openAIErrorAnswer(err)
		writeOpenAIBody(w, status, body)
		return
	}
	h := w.Header()
	h.Set("Location", RequestsPath+id)
	h.Set("Preference-Applied", "respond-async")
	writeTicket(w, id, llmfleet.RequestQueued)
}

// openAIErrorAnswer returns the status and body a batched call of the
// OpenAI face that failed with err is answered with: the API's own
// envelope and status when the provider answered, else openAIFailure's.
func openAIErrorAnswer(err error) (int, []byte) {
	var pe *llmfleet.Error
	if errors.As(err, &pe) && pe.StatusCode != 0 {
		if _, ok := openaiwire.ParseError(pe.Body); ok {
			return pe.StatusCode, pe.Body
		}
	}
	status, typ, code, msg := openAIFailure(err)
	return status, openaiwire.Envelope(typ, code, "", msg)
}

// openAIResultAnswer returns the status and body a stored result of the
// OpenAI face is answered with: the endpoint's body on success, else the
// error as openAIErrorAnswer renders a live one.
func openAIResultAnswer(res *llmfleet.StoredResult) (int, []byte) {
	if res.Err == nil {
		return res.StatusCode, res.Body
	}
	return openAIErrorAnswer(res.Err.Error())
}

func writeOpenAIBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", itoa(int64(len(body))))
	w.WriteHeader(status)
	w.Write(body)
}

// serveOpenAITicket serves GET /openai/v1/llmfleet/requests/{id}: the
// tickets API under the OpenAI face's base URL, its refusals in OpenAI's
// envelope.
func (s *Server) serveOpenAITicket(w http.ResponseWriter, r *http.Request) {
	s.answerTicket(w, r, true)
}

// writeOpenAIStored answers a stored OpenAI request sr that is done.
// With proxy-held keys, the response a /v1/responses answer carries is
// recorded as its client's first, as a live answer's is.
func (s *Server) writeOpenAIStored(w http.ResponseWriter, r *http.Request, sr *llmfleet.StoredRequest) {
	status, body := openAIResultAnswer(sr.Result)
	if s.Credentials != nil && status == http.StatusOK && isResponses(sr.Endpoint) {
		s.recordResponse(r.Context(), sr.Header.Get(clientHeader), body)
	}
	h := w.Header()
	h.Set(HeaderRequestID, sr.ID)
	h.Set(HeaderRoute, string(llmfleet.RouteBatch))
	if re := sr.Result.Err; re != nil && re.RequestID != "" {
		h.Set("X-Request-Id", re.RequestID)
	}
	writeOpenAIBody(w, status, body)
}
