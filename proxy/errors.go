package proxy

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/llmfleet/llmfleet"
)

// apiError is an error the proxy answers itself, in the Anthropic error
// envelope.
type apiError struct {
	status int
	typ    string
	msg    string
	// noRetry marks answers that clients must not retry as they are
	// (x-should-retry: false), such as a spent latency budget.
	noRetry bool
}

func (e *apiError) Error() string { return e.typ + ": " + e.msg }

func invalidRequest(msg string) *apiError {
	return &apiError{http.StatusBadRequest, "invalid_request_error", msg, false}
}

// envelope is the Anthropic error body.
type envelope struct {
	Type      string       `json:"type"`
	Error     envelopeBody `json:"error"`
	RequestID string       `json:"request_id"`
}

type envelopeBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// newRequestID returns a fresh id in the shape of the API's request ids.
func newRequestID() string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var b [24]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "req_" + string(b[:])
}

// encodeEnvelope returns the error body for typ and msg.
func encodeEnvelope(typ, msg, requestID string) []byte {
	b, _ := json.Marshal(envelope{Type: "error", Error: envelopeBody{typ, msg}, RequestID: requestID})
	return b
}

// writeAPIError answers with e in the Anthropic error envelope.
func writeAPIError(w http.ResponseWriter, e *apiError) {
	id := newRequestID()
	writeErrorBody(w, failure{status: e.status, requestID: id, noRetry: e.noRetry, body: encodeEnvelope(e.typ, e.msg, id)})
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
// gets. Provider errors keep their status and envelope; llmfleet's own
// errors map as documented in the package doc.
func failureFor(err error) failure {
	var pe *llmfleet.Error
	if errors.As(err, &pe) {
		f := failure{status: pe.StatusCode, requestID: pe.RequestID, retryAfter: pe.RetryAfter}
		if f.status == 0 {
			f.status = llmfleet.StatusForErrorType(pe.Type)
		}
		if len(pe.Body) > 0 && json.Valid(pe.Body) {
			f.body = pe.Body
		} else {
			typ := pe.Type
			if typ == "" {
				typ = "api_error"
			}
			if f.requestID == "" {
				f.requestID = newRequestID()
			}
			f.body = encodeEnvelope(typ, pe.Message, f.requestID)
		}
		return f
	}
	e := apiErrorFor(err)
	id := newRequestID()
	return failure{status: e.status, requestID: id, noRetry: e.noRetry, body: encodeEnvelope(e.typ, e.msg, id)}
}

// apiErrorFor maps llmfleet's errors (and any other error) to an envelope.
func apiErrorFor(err error) *apiError {
	switch {
	case errors.Is(err, llmfleet.ErrBudgetExceeded), errors.Is(err, context.DeadlineExceeded):
		return &apiError{http.StatusGatewayTimeout, "timeout_error", "the request's latency budget ran out before its batch ended", true}
	case errors.Is(err, llmfleet.ErrBatchExpired):
		return &apiError{529, "overloaded_error", "the provider did not process the batch before it expired", false}
	case errors.Is(err, llmfleet.ErrClosed):
		return &apiError{529, "overloaded_error", "llmfleet is shutting down", false}
	case errors.Is(err, llmfleet.ErrBatchCanceled):
		return &apiError{http.StatusInternalServerError, "api_error", "the batch holding the request was canceled", false}
	case errors.Is(err, llmfleet.ErrResultMissing):
		return &apiError{http.StatusInternalServerError, "api_error", "the batch ended without a result for the request", false}
	case errors.Is(err, llmfleet.ErrUnknownProvider):
		return &apiError{http.StatusInternalServerError, "api_error", "llmfleet has no provider for the request", false}
	default:
		return &apiError{http.StatusBadGateway, "api_error", "llmfleet could not reach the provider", false}
	}
}

// eventData returns the envelope as one line, fit for an SSE error event.
func (f failure) eventData() []byte {
	return compactJSON(f.body)
}
