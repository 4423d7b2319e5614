package httpretry

import (
	"net/http"
	"testing"
)

func TestShouldRetryAndStatus(t *testing.T) {
	for _, c := range []struct {
		v         string
		retry, ok bool
	}{
		{"true", true, true}, {"false", false, true}, {"", false, false}, {"TRUE", false, false}, {"1", false, false},
	} {
		h := http.Header{}
		if c.v != "" {
			h.Set("x-should-retry", c.v)
		}
		if retry, ok := ShouldRetry(h); retry != c.retry || ok != c.ok {
			t.Errorf("ShouldRetry(%q) = %v, %v; want %v, %v", c.v, retry, ok, c.retry, c.ok)
		}
	}
	for status, want := range map[int]bool{
		400: false, 401: false, 403: false, 404: false, 408: true, 409: true, 413: false,
		429: true, 500: true, 502: true, 503: true, 504: true, 529: true,
	} {
		if got := RetryableStatus(status); got != want {
			t.Errorf("RetryableStatus(%d) = %v; want %v", status, got, want)
		}
	}
}
