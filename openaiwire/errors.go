package openaiwire

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/llmfleet/llmfleet"
)

// APIError is the object inside the API's error envelope. Param and Code
// are null when empty.
type APIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// Envelope returns the API's error body {"error":{"message","type",
// "param","code"}}; an empty code or param is sent as null, as the API
// does.
func Envelope(typ, code, param, msg string) []byte {
	e := APIError{Message: msg, Type: typ}
	if code != "" {
		e.Code = &code
	}
	if param != "" {
		e.Param = &param
	}
	b, _ := json.Marshal(struct {
		Error APIError `json:"error"`
	}{e})
	return b
}

// ParseError reads an error envelope; ok is false if body is not one.
func ParseError(body []byte) (e APIError, ok bool) {
	var env struct {
		Error *APIError `json:"error"`
	}
	if json.Unmarshal(body, &env) != nil || env.Error == nil {
		return APIError{}, false
	}
	return *env.Error, true
}

// Reason classifies an error answer in llmfleet's terms:
// llmfleet.ErrFlexUnavailable for the unbilled 429 refusing a flex call
// for lack of capacity ("resource unavailable"), llmfleet.ErrFlexUnsupported
// for a 400 refusing the service_tier parameter (the model has no flex
// tier); nil for any other answer.
func Reason(status int, body []byte) error {
	e, ok := ParseError(body)
	if !ok {
		return nil
	}
	code := ""
	if e.Code != nil {
		code = *e.Code
	}
	switch {
	case status == http.StatusTooManyRequests &&
		(e.Type == "resource_unavailable" || code == "resource_unavailable" ||
			strings.Contains(strings.ToLower(e.Message), "resource unavailable")):
		return llmfleet.ErrFlexUnavailable
	case status == http.StatusBadRequest && e.Param != nil && *e.Param == "service_tier":
		return llmfleet.ErrFlexUnsupported
	}
	return nil
}

// ErrorOf returns the *llmfleet.Error of an error answer: its status, the
// envelope's type (its code when it has no type), message and body, and
// its Reason.
func ErrorOf(status int, body []byte, requestID string) *llmfleet.Error {
	pe := &llmfleet.Error{StatusCode: status, RequestID: requestID, Body: body, Reason: Reason(status, body)}
	if e, ok := ParseError(body); ok {
		pe.Type, pe.Message = e.Type, e.Message
		if pe.Type == "" && e.Code != nil {
			pe.Type = *e.Code
		}
	}
	if pe.Type == "" {
		pe.Type = TypeOfStatus(status)
	}
	return pe
}

// TypeOfStatus returns the error type the API sends with a status, for
// an answer that named none.
func TypeOfStatus(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_request_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "invalid_request_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}
