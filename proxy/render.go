package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
)

// errorAnswer returns the HTTP status and the Anthropic error envelope that
// a client gets for err, an error of a Submitter: a provider *Error keeps
// its status and envelope; llmfleet's own errors map to the envelope of the
// closest API error (a spent budget: 504 timeout_error; an expired batch or
// a shutdown: 529 overloaded_error; a canceled batch or a missing result:
// 500 api_error; anything else: 502 api_error).
func errorAnswer(err error) (status int, body []byte) { return errorAnswerID(err, "") }

// errorAnswerID is errorAnswer with the request_id to give an answer of
// llmfleet's own (a new one if empty). A request llmfleet could not
// record in its database (an error wrapping llmfleet.ErrStore, its caller
// still there) is 503 api_error, naming the database and the cause.
func errorAnswerID(err error, requestID string) (status int, body []byte) {
	var pe *llmfleet.Error
	if errors.As(err, &pe) {
		status = pe.StatusCode
		if status == 0 {
			status = claudewire.StatusForType(pe.Type)
		}
		if len(pe.Body) > 0 && json.Valid(pe.Body) {
			return status, pe.Body
		}
		typ := pe.Type
		if typ == "" {
			typ = "api_error"
		}
		reqID := pe.RequestID
		if reqID == "" {
			reqID = llmfleet.NewID("req_")
		}
		return status, claudewire.Envelope(typ, pe.Message, reqID)
	}
	typ, msg := "api_error", "llmfleet could not reach the provider"
	status = http.StatusBadGateway
	switch {
	case errors.Is(err, llmfleet.ErrUpstreamTimeout):
		status, typ, msg = http.StatusGatewayTimeout, "timeout_error", "the provider did not answer llmfleet's call within its upstream timeout"
	case errors.Is(err, llmfleet.ErrBudgetExceeded), errors.Is(err, context.DeadlineExceeded):
		status, typ, msg = http.StatusGatewayTimeout, "timeout_error", "the request's latency budget ran out before its batch ended"
	case isStoreFailure(err):
		status, msg = http.StatusServiceUnavailable, storeFailureMessage(err)
	case errors.Is(err, llmfleet.ErrBatchExpired):
		status, typ, msg = 529, "overloaded_error", "the provider did not process the batch before it expired"
	case errors.Is(err, llmfleet.ErrClosed):
		status, typ, msg = 529, "overloaded_error", "llmfleet is shutting down"
	case errors.Is(err, llmfleet.ErrBatchCanceled):
		status, msg = http.StatusInternalServerError, "the batch holding the request was canceled"
	case errors.Is(err, llmfleet.ErrResultMissing):
		status, msg = http.StatusInternalServerError, "the batch ended without a result for the request"
	case errors.Is(err, context.Canceled):
		status, msg = 499, "the caller canceled the request"
	case errors.Is(err, llmfleet.ErrIDConflict):
		status, typ, msg = http.StatusBadRequest, "invalid_request_error", "This Idempotency-Key was already used for a different request (another body or another key): a retry must repeat its request exactly."
	}
	if requestID == "" {
		requestID = llmfleet.NewID("req_")
	}
	return status, claudewire.Envelope(typ, msg, requestID)
}

// resultAnswer returns the status and body a stored result is answered
// with: the provider's body on success, else its error rendered as
// errorAnswer renders a live one (a stored request_id is kept, so that
// the answer is the same bytes whenever it is read).
func resultAnswer(res *llmfleet.StoredResult) (int, []byte) {
	if res.Err == nil {
		return res.StatusCode, res.Body
	}
	status, body := errorAnswerID(res.Err.Error(), res.Err.RequestID)
	if res.StatusCode != 0 {
		status = res.StatusCode
	}
	return status, body
}
