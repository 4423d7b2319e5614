package httpretry

import (
	"math/rand/v2"
	"time"
)

const (
	// BaseDelay is the backoff before the first retry.
	BaseDelay = 500 * time.Millisecond
	// MaxDelay is the longest backoff: the base doubles at each retry up
	// to it.
	MaxDelay = 8 * time.Second
)

// Backoff is the wait before retry number n+1 (n counts from 0) when the
// answer asked for none: BaseDelay doubling at each retry up to MaxDelay,
// less up to a quarter at random, so that callers that failed together
// spread out.
func Backoff(n int) time.Duration {
	return backoff(n, rand.Int64N)
}

// backoff is Backoff with the jitter drawn by int64n (a number in [0, n)).
func backoff(n int, int64n func(int64) int64) time.Duration {
	d := min(BaseDelay<<min(max(n, 0), 10), MaxDelay)
	return d - time.Duration(int64n(int64(d/4)+1))
}

// MaxRetries is the number of retries an adapter makes when its
// configured MaxRetries is n: def when n is zero, none when negative.
func MaxRetries(n, def int) int {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}
