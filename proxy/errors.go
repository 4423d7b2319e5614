package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/claudewire"
)

// apiError is an error the proxy answers itself, in the Anthropic error
// envelope.
type apiError struct {
	status int
	typ    string
	msg    string
}

func (e *apiError) Error() string { return e.typ + ": " + e.msg }

func invalidRequest(msg string) *apiError {
	return &apiError{http.StatusBadRequest, "invalid_request_error", msg}
}

// writeAPIError answers with e in the Anthropic error envelope.
func writeAPIError(w http.ResponseWriter, e *apiError) {
	if e == bodyTooSlow || e == bodiesFull {
		// The body is left unread: the connection cannot carry another
		// request.
		w.Header().Set("Connection", "close")
	}
	id := llmfleet.NewID("req_")
	writeErrorBody(w, failure{status: e.status, requestID: id, body: claudewire.Envelope(e.typ, e.msg, id)})
}

// writeErrorBody answers with f.
func writeErrorBody(w http.ResponseWriter, f failure) {
	status, requestID, retryAfter, body := f.status, f.requestID, f.retryAfter, f.body
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if requestID != "" {
		h.Set("Request-Id", requestID)
	}
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((retryAfter+time.Second-1)/time.Second), 10))
	}
	if f.noRetry {
		h.Set("X-Should-Retry", "false")
	}
	w.WriteHeader(status)
	w.Write(body)
}

// failure is the answer the sync API would have given for err, an error
// returned by the Submitter: its status, retry delay and envelope.
type failure struct {
	status     int
	requestID  string
	retryAfter time.Duration
	noRetry    bool
	body       []byte
}

// failureFor maps an error of the Submitter to the HTTP answer a client
// gets (errorAnswer): provider errors keep their status, envelope
// and retry delay; llmfleet's own errors map as documented in the package
// doc, and a spent budget must not be retried as is.
func failureFor(err error) failure {
	status, body := errorAnswer(err)
	f := failure{status: status, body: body}
	var pe *llmfleet.Error
	if errors.As(err, &pe) {
		f.retryAfter, f.requestID = pe.RetryAfter, pe.RequestID
	} else if status == http.StatusServiceUnavailable && isStoreFailure(err) {
		f.retryAfter = storeRetryAfter
	}
	if f.requestID == "" {
		var env struct {
			RequestID string `json:"request_id"`
		}
		json.Unmarshal(body, &env)
		f.requestID = env.RequestID
	}
	f.noRetry = errors.Is(err, llmfleet.ErrBudgetExceeded) || errors.Is(err, context.DeadlineExceeded)
	return f
}

// eventData returns the envelope as one line, fit for an SSE error event.
func (f failure) eventData() []byte {
	return compactJSON(f.body)
}
