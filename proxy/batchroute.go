package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
)

// This file holds the Anthropic face's answers on the batch route: the
// Message, or a synthesised event stream for a streaming caller, and
// failures as the sync API would have answered them.

// anthropicPing appends the ping event a waiting stream is sent.
func anthropicPing(b []byte) []byte { return append(b, pingEvent...) }

// anthropicStreamHead sets the headers of a synthesised event stream. If
// trailer is set, the batch id header is declared as a trailer, to be set
// once it is known.
func anthropicStreamHead(h http.Header, trailer bool) {
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Request-Id", llmfleet.NewID("req_"))
	if trailer {
		h.Set("Trailer", HeaderBatchID)
	}
}

// answer answers a non-streaming batched call with its Message.
func (f anthropicFace) answer(ctx context.Context, w http.ResponseWriter, c *call, resp *llmfleet.Response) {
	bookOf(f.s).recordAnswer(ctx, c.owner, resp.Body, anthropicAnswerIDs)
	h := w.Header()
	if resp.RequestID != "" {
		h.Set(HeaderRequestID, resp.RequestID)
	}
	if resp.Route != "" {
		h.Set(HeaderRoute, string(resp.Route)) // sync when a rescue answered
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	h.Set("Request-Id", llmfleet.NewID("req_"))
	if resp.BatchID != "" {
		h.Set(HeaderBatchID, resp.BatchID)
	}
	w.WriteHeader(http.StatusOK)
	w.Write(resp.Body)
}

// fail answers err, from the Submitter, as the sync API would have.
func (f anthropicFace) fail(ctx context.Context, w http.ResponseWriter, c *call, err error, stored bool) {
	if !stored {
		writeErrorBody(w, failureFor(err))
		return
	}
	setBatchID(w, err)
	writeErrorBody(w, f.batchFailure(ctx, c, err))
}

// endStream ends a streaming batched call's stream: the Message as
// events, or the failure as an error event (or an error answer if the
// stream has not begun).
func (f anthropicFace) endStream(ctx context.Context, p *streamPark, c *call, resp *llmfleet.Response, err error, begun bool) {
	w := p.w
	if err != nil {
		logFailure(f.s.log, ctx, err)
		setBatchID(w, err) // a trailer if the stream had begun
		fl := f.batchFailure(ctx, c, err)
		if !begun {
			writeErrorBody(w, fl)
			return
		}
		writeErrorEvent(w, fl.eventData())
		p.rc.Flush()
		return
	}
	if resp.BatchID != "" {
		w.Header().Set(HeaderBatchID, resp.BatchID) // a trailer if the stream had begun
	}
	if !begun {
		p.begin(false)
	}
	bookOf(f.s).recordAnswer(ctx, c.owner, resp.Body, anthropicAnswerIDs)
	if err := writeMessageEvents(w, resp.Body); err != nil {
		f.s.log.Warn("batch result is not a Message", "batch", resp.BatchID, "err", err)
		writeErrorEvent(w, claudewire.Envelope("api_error", "llmfleet got a malformed batch result", llmfleet.NewID("req_")))
	}
	p.rc.Flush()
}

// setBatchID names the batch of a batched request that failed in it.
func setBatchID(w http.ResponseWriter, err error) {
	var be *llmfleet.BatchError
	if errors.As(err, &be) && be.BatchID != "" {
		w.Header().Set(HeaderBatchID, be.BatchID)
	}
}

// batchFailure is the answer to a batched call that failed with err. If
// the Submitter stored an answer for the request (llmfleet.Tickets), that
// very answer is given, so that fetching the request again later gets the
// same bytes, request_id included.
func (f anthropicFace) batchFailure(ctx context.Context, c *call, err error) failure {
	fl := failureFor(err)
	t, ok := f.s.Submitter.(llmfleet.Tickets)
	if !ok || ctx.Err() != nil {
		return fl
	}
	sr, lerr := t.Lookup(ctx, c.req.ID, c.req.Credential)
	if lerr != nil || sr.State != llmfleet.RequestDone || sr.Result == nil || sr.Result.Err == nil {
		return fl
	}
	fl.status, fl.body = resultAnswer(sr.Result)
	if id := requestIDOf(fl.body); id != "" {
		fl.requestID = id
	}
	return fl
}

// requestIDOf returns the request_id of an Anthropic error envelope.
func requestIDOf(body []byte) string {
	var env struct {
		RequestID string `json:"request_id"`
	}
	json.Unmarshal(body, &env)
	return env.RequestID
}

// stored answers a stored Anthropic request that is done: the status and
// body its call would have been answered with.
func (f anthropicFace) stored(ctx context.Context, w http.ResponseWriter, sr *llmfleet.StoredRequest) {
	status, body := resultAnswer(sr.Result)
	if status == http.StatusOK && f.s.Credentials != nil {
		bookOf(f.s).recordAnswer(ctx, sr.Header.Get(clientHeader), body, anthropicAnswerIDs) // the ticket's owner: its caller
	}
	h := w.Header()
	h.Set(HeaderRequestID, sr.ID)
	h.Set(HeaderRoute, string(llmfleet.RouteBatch))
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	reqID := ""
	if status != http.StatusOK {
		reqID = requestIDOf(body)
	}
	if reqID == "" {
		reqID = llmfleet.NewID("req_")
	}
	h.Set("Request-Id", reqID)
	w.WriteHeader(status)
	w.Write(body)
}

// says returns the Anthropic face's refusal of kind k.
func (f anthropicFace) says(k refusalKind, arg string) *refusal {
	e := &refusal{status: http.StatusBadRequest, typ: "invalid_request_error"}
	switch k {
	case stateFailed:
		e.status, e.typ, e.msg = http.StatusInternalServerError, "api_error", "llmfleet could not read or write its state"
	case ticketState:
		e.status, e.typ, e.msg = http.StatusInternalServerError, "api_error", "llmfleet could not read its state"
	case unreadable:
		e.status, e.typ, e.msg = http.StatusBadGateway, "api_error", "llmfleet could not read the upstream's answer"
	case badLimit:
		e.msg = "limit: Input should be an integer between 1 and " + arg
	case bothCursors:
		e.msg = "after_id and before_id cannot both be given"
	case badCursor:
		e.msg = strconv.Quote(arg) + " is not a valid batch id for pagination"
	case batchNotFound:
		e.status, e.typ, e.msg = http.StatusNotFound, "not_found_error", "Not found: no batch "+strconv.Quote(arg)+" for this key"
	case fileNotFound:
		e.status, e.typ, e.msg = http.StatusNotFound, "not_found_error", "Not found: no file "+strconv.Quote(arg)+" for this key"
	case objectNotFound:
		e.status, e.typ, e.msg = http.StatusNotFound, "not_found_error", "Not found: no "+arg+" for this key"
	case ticketNotFound:
		e.status, e.typ, e.msg = http.StatusNotFound, "not_found_error", ticketNotFoundMessage(arg)
	case notRecorded:
		e.status, e.typ, e.msg = http.StatusInternalServerError, "api_error", "llmfleet could not record the batch "+arg
	case unknownKey:
		e = refusalOf(unauthorized)
	case noKey:
		e = refusalOf(missingKey)
	case unknownPath:
		e.status, e.typ, e.msg = http.StatusNotFound, "not_found_error", "Not found: "+arg
	case faceClosed:
		e.status, e.typ, e.msg = http.StatusForbidden, "permission_error", "This llmfleet holds no key for the Anthropic API."
	case notShared:
		e.status, e.typ, e.msg = http.StatusForbidden, "permission_error", "This llmfleet holds one key for all its clients: "+arg+
			" would reach what other clients made under it, so it is not passed on."
	case spendLimit:
		e.status, e.typ, e.msg = http.StatusTooManyRequests, "rate_limit_error", arg
	case zdrBatch:
		e.msg = zdrBatchMessage(arg)
	}
	return e
}

// logFailure logs a batched call's failure that is llmfleet's own.
func logFailure(log *slog.Logger, ctx context.Context, err error) {
	var pe *llmfleet.Error
	if ctx.Err() != nil || errors.As(err, &pe) {
		return // the caller left, or the provider answered: nothing wrong here
	}
	log.Warn("batched request failed", "err", err)
}
