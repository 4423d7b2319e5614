package geminiwire

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Failure returns the status and Google's error envelope a call that
// failed with err is answered with by a face of the Gemini API, in the
// API's own terms: a provider's *llmfleet.Error as the provider answered
// it (its envelope, or one made of its status and message); llmfleet's
// own errors as the nearest canonical status: a budget or the upstream
// timeout run out DEADLINE_EXCEEDED (504), a batch expired, llmfleet
// shutting down or its database failing UNAVAILABLE (503, retryable; the
// database with a RetryInfo of 3 s), a batch canceled or a result missing
// INTERNAL (500), the caller gone CANCELLED (499), an idempotency key
// reused INVALID_ARGUMENT (400), anything else 502.
func Failure(err error) (status int, body []byte) {
	var pe *llmfleet.Error
	if errors.As(err, &pe) {
		if s, ok := ParseError(pe.Body); ok && s.Code == pe.StatusCode {
			return pe.StatusCode, pe.Body
		}
		msg := pe.Message
		if msg == "" {
			msg = http.StatusText(pe.StatusCode)
		}
		return pe.StatusCode, Envelope(pe.StatusCode, msg)
	}
	status, msg := http.StatusBadGateway, "llmfleet could not reach the provider: "+err.Error()
	var details []json.RawMessage
	switch {
	case errors.Is(err, llmfleet.ErrUpstreamTimeout):
		status, msg = http.StatusGatewayTimeout, "The provider did not answer llmfleet's call within its upstream timeout."
	case errors.Is(err, llmfleet.ErrBudgetExceeded), errors.Is(err, context.DeadlineExceeded):
		status, msg = http.StatusGatewayTimeout, "The request's latency budget ran out before its batch answered."
	case errors.Is(err, llmfleet.ErrStore):
		status, msg = http.StatusServiceUnavailable, "llmfleet's database failed; nothing was sent upstream."
		details = append(details, RetryInfo(3*time.Second))
	case errors.Is(err, llmfleet.ErrBatchExpired):
		status, msg = http.StatusServiceUnavailable, "The request could not be run before its batch expired."
	case errors.Is(err, llmfleet.ErrClosed):
		status, msg = http.StatusServiceUnavailable, "llmfleet is shutting down."
	case errors.Is(err, llmfleet.ErrBatchCanceled):
		status, msg = http.StatusInternalServerError, "The batch holding the request was cancelled before it ran."
	case errors.Is(err, llmfleet.ErrResultMissing):
		status, msg = http.StatusInternalServerError, "The batch ended without a result for the request."
	case errors.Is(err, context.Canceled):
		status, msg = 499, "The caller cancelled the request."
	case errors.Is(err, llmfleet.ErrIDConflict):
		status, msg = http.StatusBadRequest, "This Idempotency-Key was already used for a different request (another body or another key): a retry must repeat its request exactly."
	}
	return status, Envelope(status, msg, details...)
}
