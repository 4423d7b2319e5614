package proxy

import (
	"context"
	"net/http"
	"strconv"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/geminiwire"
	"github.com/llmfleet/llmfleet/sse"
)

// This file gives the Gemini face's batched calls their answers: a
// GenerateContentResponse, a stream synthesised from it, a stored answer
// read by ticket, and failures, all in the API's shapes.

// answer answers a non-streaming batched call with the
// GenerateContentResponse.
func (f geminiFace) answer(_ context.Context, w http.ResponseWriter, _ *call, resp *llmfleet.Response) {
	h := w.Header()
	if resp.RequestID != "" {
		h.Set(HeaderRequestID, resp.RequestID)
	}
	if resp.BatchID != "" {
		h.Set(HeaderBatchID, resp.BatchID)
	}
	h.Set(HeaderRoute, string(resp.Route))
	writeGeminiBody(w, http.StatusOK, resp.Body)
}

// fail answers a batched call that failed with err: the API's own
// envelope and status when the provider answered, else the nearest
// canonical status (geminiwire.Failure).
func (f geminiFace) fail(_ context.Context, w http.ResponseWriter, _ *call, err error, _ bool) {
	status, body := geminiwire.Failure(err)
	writeGeminiBody(w, status, body)
}

// endStream ends a stream synthesised from a batch: its chunks, or the
// error envelope as an event (as the API ends a stream that failed).
func (f geminiFace) endStream(_ context.Context, p *streamPark, _ *call, resp *llmfleet.Response, err error, _ bool) {
	if err == nil {
		out, serr := geminiwire.AppendStream(nil, resp.Body)
		if serr == nil {
			p.w.Write(out)
			return
		}
		err = serr
	}
	_, body := geminiwire.Failure(err)
	p.w.Write(sse.AppendEvent(nil, "", body))
}

// stored answers a stored Gemini request sr that is done, as its call
// would have been answered.
func (f geminiFace) stored(_ context.Context, w http.ResponseWriter, sr *llmfleet.StoredRequest) {
	status, body := sr.Result.StatusCode, sr.Result.Body
	if re := sr.Result.Err; re != nil {
		status, body = geminiwire.Failure(re.Error())
	}
	h := w.Header()
	h.Set(HeaderRequestID, sr.ID)
	h.Set(HeaderRoute, string(llmfleet.RouteBatch))
	writeGeminiBody(w, status, body)
}

// says returns the Gemini face's refusal of kind k, in the words of the
// API where it has some.
func (f geminiFace) says(k refusalKind, arg string) *refusal {
	status, msg := http.StatusBadRequest, ""
	switch k {
	case stateFailed, notRecorded:
		status, msg = http.StatusInternalServerError, "llmfleet could not read or write its state."
	case ticketState:
		status, msg = http.StatusInternalServerError, "llmfleet could not read its state"
	case unreadable:
		status, msg = http.StatusBadGateway, "llmfleet could not read the upstream's answer."
	case badLimit:
		msg = "pageSize must be between 1 and " + arg + "."
	case bothCursors:
		msg = "pageToken was given twice."
	case badCursor:
		msg = "Invalid page token: " + strconv.Quote(arg) + "."
	case fileNotFound, batchNotFound, objectNotFound:
		status, msg = http.StatusNotFound, "Requested entity was not found: "+arg
	case ticketNotFound:
		status, msg = http.StatusNotFound, ticketNotFoundMessage(arg)
	case unknownKey:
		msg = "API key not valid. Please pass a valid API key: this llmfleet admits clients by keys of its own."
	case noKey:
		status, msg = http.StatusForbidden, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."
	case unknownPath:
		status, msg = http.StatusNotFound, "Unknown request URL: "+arg+"."
	case faceClosed:
		status, msg = http.StatusForbidden, "The Gemini face of this llmfleet is closed: it runs with proxy-held keys and holds none for Gemini."
	case notShared:
		status, msg = http.StatusForbidden, "This llmfleet holds one Gemini key for all its clients: "+arg+
			" would reach what other clients made under it, so it is not passed on."
	case spendLimit:
		status, msg = http.StatusTooManyRequests, arg
	case zdrBatch:
		msg = zdrBatchMessage(arg)
	}
	return &refusal{status: status, typ: geminiwire.StatusOf(status), msg: msg}
}
