package httpretry

import "net/http"

// ShouldRetry reads an answer's x-should-retry header: ok is false when
// it says neither "true" nor "false".
func ShouldRetry(h http.Header) (retry, ok bool) {
	switch h.Get("X-Should-Retry") {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// RetryableStatus reports whether an error answer's status may be
// retried: 408, 409, 429 and every 5xx.
func RetryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= 500
}
