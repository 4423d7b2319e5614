package geminiwire

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmfleet/llmfleet"
)

// The canonical statuses of Google's error envelope that the API answers.
const (
	StatusInvalidArgument    = "INVALID_ARGUMENT"
	StatusFailedPrecondition = "FAILED_PRECONDITION"
	StatusUnauthenticated    = "UNAUTHENTICATED"
	StatusPermissionDenied   = "PERMISSION_DENIED"
	StatusNotFound           = "NOT_FOUND"
	StatusResourceExhausted  = "RESOURCE_EXHAUSTED"
	StatusCancelled          = "CANCELLED"
	StatusInternal           = "INTERNAL"
	StatusUnavailable        = "UNAVAILABLE"
	StatusDeadlineExceeded   = "DEADLINE_EXCEEDED"
)

// The @type of the error details llmfleet reads or writes.
const (
	TypeRetryInfo = "type.googleapis.com/google.rpc.RetryInfo"
	TypeErrorInfo = "type.googleapis.com/google.rpc.ErrorInfo"
)

// Status is the object inside Google's error envelope (google.rpc.Status
// as JSON), also an errored batch response's error.
type Status struct {
	Code    int               `json:"code"`
	Message string            `json:"message"`
	Status  string            `json:"status,omitempty"`
	Details []json.RawMessage `json:"details,omitempty"`
}

// HTTPStatus returns the HTTP status that comes with a canonical status.
func HTTPStatus(status string) int {
	switch status {
	case StatusInvalidArgument, StatusFailedPrecondition:
		return http.StatusBadRequest
	case StatusUnauthenticated:
		return http.StatusUnauthorized
	case StatusPermissionDenied:
		return http.StatusForbidden
	case StatusNotFound:
		return http.StatusNotFound
	case StatusResourceExhausted:
		return http.StatusTooManyRequests
	case StatusCancelled:
		return 499
	case StatusUnavailable:
		return http.StatusServiceUnavailable
	case StatusDeadlineExceeded:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// StatusOf returns the canonical status that comes with an HTTP status.
func StatusOf(code int) string {
	switch code {
	case http.StatusBadRequest:
		return StatusInvalidArgument
	case http.StatusUnauthorized:
		return StatusUnauthenticated
	case http.StatusForbidden:
		return StatusPermissionDenied
	case http.StatusNotFound:
		return StatusNotFound
	case http.StatusTooManyRequests:
		return StatusResourceExhausted
	case 499:
		return StatusCancelled
	case http.StatusServiceUnavailable:
		return StatusUnavailable
	case http.StatusGatewayTimeout:
		return StatusDeadlineExceeded
	}
	if code >= 400 && code < 500 {
		return StatusFailedPrecondition
	}
	return StatusInternal
}

// RetryInfo returns the detail google.rpc.RetryInfo asking to wait d.
func RetryInfo(d time.Duration) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"@type": TypeRetryInfo, "retryDelay": FormatDuration(d)})
	return b
}

// FormatDuration writes d as a protobuf Duration in JSON: seconds with
// up to nine decimals and an "s" ("48s", "1.5s").
func FormatDuration(d time.Duration) string {
	s := strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	return s + "s"
}

// ParseDuration reads a protobuf Duration in JSON ("48s", "0.5s").
func ParseDuration(v string) (time.Duration, bool) {
	num, ok := strings.CutSuffix(v, "s")
	if !ok || num == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || !(f >= 0 && f <= 315576000000) {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}

// Envelope returns the error body {"error":{"code","message","status",
// "details"}} of an HTTP status, its canonical status and message.
func Envelope(code int, msg string, details ...json.RawMessage) []byte {
	b, _ := json.Marshal(struct {
		Error Status `json:"error"`
	}{Status{Code: code, Message: msg, Status: StatusOf(code), Details: details}})
	return b
}

// ParseError reads an error envelope; ok is false if body is not one.
func ParseError(body []byte) (s Status, ok bool) {
	var env struct {
		Error *Status `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || env.Error == nil {
		return Status{}, false
	}
	return *env.Error, true
}

// RetryDelay returns the wait a status's RetryInfo detail asks for.
func (s Status) RetryDelay() (time.Duration, bool) {
	for _, d := range s.Details {
		var ri struct {
			Type       string `json:"@type"`
			RetryDelay string `json:"retryDelay"`
		}
		if json.Unmarshal(d, &ri) == nil && ri.Type == TypeRetryInfo {
			if v, ok := ParseDuration(ri.RetryDelay); ok {
				return v, true
			}
		}
	}
	return 0, false
}

// Reason classifies an error answer to a call in llmfleet's terms. A flex
// call shed for lack of capacity (503 UNAVAILABLE, or 429
// RESOURCE_EXHAUSTED: the API has been seen to answer both) is
// llmfleet.ErrFlexUnavailable, not billed; a 400 naming the service tier
// (the model has no flex tier) is llmfleet.ErrFlexUnsupported; anything
// else, and any answer to a call that did not ask for flex, is nil.
func Reason(flex bool, code int, body []byte) error {
	if !flex {
		return nil
	}
	s, _ := ParseError(body)
	switch {
	case code == http.StatusServiceUnavailable, code == http.StatusTooManyRequests:
		return llmfleet.ErrFlexUnavailable
	case code == http.StatusBadRequest && strings.Contains(strings.ToLower(strings.ReplaceAll(s.Message, "_", "")), "servicetier"):
		return llmfleet.ErrFlexUnsupported
	}
	return nil
}

// ErrorOf returns the *llmfleet.Error of an error answer: its HTTP
// status, the envelope's canonical status as the type (the one of the
// HTTP status if it named none), message, body, RetryInfo's delay (else
// the Retry-After header's), and Reason for a call that asked flex.
func ErrorOf(code int, body []byte, h http.Header, flex bool) *llmfleet.Error {
	pe := &llmfleet.Error{StatusCode: code, Body: body, Reason: Reason(flex, code, body)}
	if s, ok := ParseError(body); ok {
		pe.Type, pe.Message = s.Status, s.Message
		pe.RetryAfter, _ = s.RetryDelay()
	}
	if pe.Type == "" {
		pe.Type = StatusOf(code)
	}
	if pe.Message == "" {
		pe.Message = http.StatusText(code)
	}
	if pe.RetryAfter == 0 && h != nil {
		if secs, err := strconv.Atoi(h.Get("Retry-After")); err == nil && secs > 0 {
			pe.RetryAfter = time.Duration(secs) * time.Second
		}
	}
	return pe
}
