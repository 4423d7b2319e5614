package proxy

import (
	"context"
	"errors"
	"net/http"
	"strconv"

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

// answer answers a non-streaming batched call with the endpoint's body.
// With proxy-held keys, the response a /v1/responses answer carries is
// recorded as its client's first.
func (f openAIFace) answer(ctx context.Context, w http.ResponseWriter, c *call, resp *llmfleet.Response) {
	bookOf(f.s).recordAnswer(ctx, c.owner, resp.Body, openAIAnswerIDs)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if resp.RequestID != "" {
		h.Set(HeaderRequestID, resp.RequestID)
	}
	if resp.BatchID != "" {
		h.Set(HeaderBatchID, resp.BatchID)
	}
	h.Set(HeaderRoute, string(resp.Route))
	h.Set("Content-Length", itoa(int64(len(resp.Body))))
	w.WriteHeader(http.StatusOK)
	w.Write(resp.Body)
}

// fail answers a batched call that failed with err: the API's own
// envelope and status when the provider answered, else openAIFailure's.
func (f openAIFace) fail(_ context.Context, w http.ResponseWriter, _ *call, err error, _ bool) {
	status, body := openAIErrorAnswer(err)
	writeOpenAIBody(w, status, body)
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

// writeOpenAIBody answers status with the JSON body.
func writeOpenAIBody(w http.ResponseWriter, status int, body []byte) {
	writeBody(w, status, "application/json", body)
}

// writeBody answers status with body, of the content type ctype and of
// its length.
func writeBody(w http.ResponseWriter, status int, ctype string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", itoa(int64(len(body))))
	w.WriteHeader(status)
	w.Write(body)
}

// stored answers a stored OpenAI request sr that is done. With
// proxy-held keys, what its answer names (a response, a spoken answer) is
// recorded as its client's first, as a live answer's is.
func (f openAIFace) stored(ctx context.Context, w http.ResponseWriter, sr *llmfleet.StoredRequest) {
	status, body := openAIResultAnswer(sr.Result)
	if f.s.Credentials != nil && status == http.StatusOK {
		bookOf(f.s).recordAnswer(ctx, sr.Header.Get(clientHeader), body, openAIAnswerIDs)
	}
	h := w.Header()
	h.Set(HeaderRequestID, sr.ID)
	h.Set(HeaderRoute, string(llmfleet.RouteBatch))
	if re := sr.Result.Err; re != nil && re.RequestID != "" {
		h.Set("X-Request-Id", re.RequestID)
	}
	writeOpenAIBody(w, status, body)
}

// says returns the OpenAI face's refusal of kind k.
func (f openAIFace) says(k refusalKind, arg string) *refusal {
	e := &refusal{status: http.StatusBadRequest, typ: "invalid_request_error"}
	switch k {
	case stateFailed, notRecorded:
		e.status, e.typ, e.msg = http.StatusInternalServerError, "server_error", "llmfleet could not read or write its state."
	case ticketState:
		e.status, e.typ, e.msg = http.StatusInternalServerError, "server_error", "llmfleet could not read its state"
	case unreadable:
		e.status, e.typ, e.msg = http.StatusBadGateway, "api_error", "llmfleet could not read the upstream's answer."
	case badLimit:
		e.param, e.msg = "limit", "limit must be between 1 and "+arg+"."
	case bothCursors:
		e.param, e.msg = "before", "after and before cannot both be given."
	case badCursor:
		e.param, e.msg = "after", strconv.Quote(arg)+" is not a valid cursor."
	case fileNotFound:
		e.status, e.param, e.msg = http.StatusNotFound, "id", "No such File object: "+arg
	case objectNotFound:
		e.status, e.msg = http.StatusNotFound, "No such "+arg+" found."
	case batchNotFound:
		e.status, e.msg = http.StatusNotFound, "No batch found with id '"+arg+"'."
	case ticketNotFound:
		e.status, e.msg = http.StatusNotFound, ticketNotFoundMessage(arg)
	case unknownKey:
		e.status, e.code, e.msg = http.StatusUnauthorized, "invalid_api_key", "Incorrect API key provided. This llmfleet admits clients by keys of its own."
	case noKey:
		e.status, e.code, e.msg = http.StatusUnauthorized, "invalid_api_key", "You didn't provide an API key. Provide it in an Authorization header: Bearer YOUR_KEY."
	case unknownPath:
		e.status, e.code, e.msg = http.StatusNotFound, "unknown_url", "Unknown request URL: "+arg+"."
	case faceClosed:
		e.status, e.typ, e.msg = http.StatusForbidden, "permission_error", "The OpenAI face of this llmfleet is closed: it runs with proxy-held keys and holds none for OpenAI."
	case notShared:
		e.status, e.typ, e.msg = http.StatusForbidden, "permission_error", "This llmfleet holds one OpenAI key for all its clients: "+arg+
			" would reach what other clients made under it, so it is not passed on."
	case spendLimit:
		e.status, e.typ, e.code, e.msg = http.StatusTooManyRequests, "insufficient_quota", "insufficient_quota", arg
	case zdrBatch:
		e.param, e.msg = "llmfleet-route", zdrBatchMessage(arg)
	}
	return e
}
