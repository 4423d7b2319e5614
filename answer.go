package llmfleet

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
)

// ErrorAnswer returns the HTTP status and the Anthropic error envelope that
// a client gets for err, an error of a Submitter: a provider *Error keeps
// its status and envelope; llmfleet's own errors map to the envelope of the
// closest API error (a spent budget: 504 timeout_error; an expired batch or
// a shutdown: 529 overloaded_error; a canceled batch or a missing result:
// 500 api_error; anything else: 502 api_error).
func ErrorAnswer(err error) (status int, body []byte) {
	var pe *Error
	if errors.As(err, &pe) {
		status = pe.StatusCode
		if status == 0 {
			status = StatusForErrorType(pe.Type)
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
			reqID = NewID("req_")
		}
		return status, ErrorEnvelope(typ, pe.Message, reqID)
	}
	typ, msg := "api_error", "llmfleet could not reach the provider"
	status = http.StatusBadGateway
	switch {
	case errors.Is(err, ErrBudgetExceeded), errors.Is(err, context.DeadlineExceeded):
		status, typ, msg = http.StatusGatewayTimeout, "timeout_error", "the request's latency budget ran out before its batch ended"
	case errors.Is(err, ErrBatchExpired):
		status, typ, msg = 529, "overloaded_error", "the provider did not process the batch before it expired"
	case errors.Is(err, ErrClosed):
		status, typ, msg = 529, "overloaded_error", "llmfleet is shutting down"
	case errors.Is(err, ErrBatchCanceled):
		status, msg = http.StatusInternalServerError, "the batch holding the request was canceled"
	case errors.Is(err, ErrResultMissing):
		status, msg = http.StatusInternalServerError, "the batch ended without a result for the request"
	case errors.Is(err, context.Canceled):
		status, msg = 499, "the caller canceled the request"
	}
	return status, ErrorEnvelope(typ, msg, NewID("req_"))
}

// ErrorEnvelope returns the Anthropic error body for an error type and
// message.
func ErrorEnvelope(typ, msg, requestID string) []byte {
	type inner struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		Type      string `json:"type"`
		Error     inner  `json:"error"`
		RequestID string `json:"request_id"`
	}{"error", inner{typ, msg}, requestID})
	return b
}

// NewID returns a random id with the given prefix, in the shape of the
// API's ids (24 base-62 characters).
func NewID(prefix string) string {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var b [24]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + string(b[:])
}
