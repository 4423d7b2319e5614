package claudewire

import (
	"encoding/json"
	"net/http"
)

// Envelope returns the API's error body for an error type and message:
// {"type":"error","error":{"type":...,"message":...},"request_id":...}.
func Envelope(typ, msg, requestID string) []byte {
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

// statusOf maps each error type to the HTTP status the API sends it with.
var statusOf = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"conflict_error":        http.StatusConflict,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"timeout_error":         http.StatusGatewayTimeout,
	"api_error":             http.StatusInternalServerError,
	"overloaded_error":      529,
}

// StatusForType returns the HTTP status the API uses for an error type;
// 500 for a type it does not know.
func StatusForType(t string) int {
	if s, ok := statusOf[t]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// TypeForStatus returns the error type the API uses for an HTTP status:
// api_error for a 5xx it does not name, invalid_request_error for any
// other.
func TypeForStatus(status int) string {
	for t, s := range statusOf {
		if s == status && t != "invalid_request_error" {
			return t
		}
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}
