package httpretry

import (
	"math"
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{nil, 0, false},
		{http.Header{}, 0, false},
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond, true},
		{http.Header{"Retry-After": {"-2"}}, 0, true},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{"Retry-After": {"NaN"}}, 0, false},
		{http.Header{"Retry-After": {"1e300"}}, math.MaxInt64, true},
		{http.Header{"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)}}, 30 * time.Second, true},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0, true},
		{http.Header{"Retry-After": {"0"}}, 0, true},
		{http.Header{"Retry-After": {now.Add(2 * time.Minute).Format(time.RFC850)}}, 2 * time.Minute, true},
		{http.Header{"Retry-After": {now.Add(time.Hour).Format(time.ANSIC)}}, time.Hour, true},
		{http.Header{"Retry-After-Ms": {"250"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After-Ms": {"0.5"}}, 500 * time.Microsecond, true},
		{http.Header{"Retry-After-Ms": {"-1"}}, 0, true},
		{http.Header{"Retry-After-Ms": {"x"}}, 0, false},
		// retry-after-ms wins; a malformed one falls back to retry-after.
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After-Ms": {"x"}, "Retry-After": {"9"}}, 9 * time.Second, true},
	} {
		got, ok := RetryAfter(c.h, now)
		if got != c.want || ok != c.ok {
			t.Errorf("RetryAfter(%v) = %v, %v; want %v, %v", c.h, got, ok, c.want, c.ok)
		}
	}
}
