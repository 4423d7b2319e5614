package httpretry

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"
)

// RetryAfter returns the wait an HTTP answer asks for before the request
// is sent again: the header retry-after-ms (milliseconds), else
// retry-after, in seconds or as an HTTP date (counted from now). Numbers
// may have a fraction; a negative one or a date in the past is no wait,
// one too large for a Duration the longest wait. ok is false when neither
// header holds a wait.
func RetryAfter(h http.Header, now time.Time) (wait time.Duration, ok bool) {
	if h == nil {
		return 0, false
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if d, ok := waitOf(v, time.Millisecond); ok {
			return d, true
		}
	}
	if v := h.Get("Retry-After"); v != "" {
		if d, ok := waitOf(v, time.Second); ok {
			return d, true
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(0, t.Sub(now)), true
		}
	}
	return 0, false
}

// waitOf reads v as a number of units.
func waitOf(v string, unit time.Duration) (time.Duration, bool) {
	x, err := strconv.ParseFloat(v, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(x) {
		return 0, false
	}
	switch d := x * float64(unit); {
	case d <= 0:
		return 0, true
	case d >= math.MaxInt64:
		return math.MaxInt64, true
	default:
		return time.Duration(d), true
	}
}
