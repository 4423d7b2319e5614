package httpretry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Loop holds one adapter's rules for retrying a call.
type Loop struct {
	// Clock is what the waits are slept on (llmfleet.Sleep); nil is the
	// real one.
	Clock llmfleet.Clock
	// MaxRetries is how many times the call is made again at most after
	// its first attempt.
	MaxRetries int
	// Bounded makes the context's deadline bound the retries: a retry
	// whose wait would end after it is not made, and the error of the
	// last attempt is returned, as it is when the context ends during a
	// wait. Unbounded, the wait is made and the context's error returned
	// when it ends first.
	Bounded bool
	// Retrying, if not nil, is told of each retry (n counts from 1), the
	// error it follows and its wait, before the wait: for logs.
	Retrying func(n int, err error, wait time.Duration)
}

// Try is what one attempt tells the loop.
type Try struct {
	// Err is the attempt's error; nil when it succeeded.
	Err error
	// Retry says whether Err may be retried.
	Retry bool
	// Wait, when Asked, is the wait the answer asked for before a retry;
	// otherwise the wait is Backoff's.
	Wait  time.Duration
	Asked bool
}

// Answered is the Try of an attempt that failed with err after an answer
// whose header is h (nil: none): its Retry-After, read at now, is the
// wait before a retry.
func Answered(err error, retry bool, h http.Header, now time.Time) Try {
	wait, asked := RetryAfter(h, now)
	return Try{Err: err, Retry: retry, Wait: wait, Asked: asked}
}

// Unanswered is the Try of an attempt whose connection failed with err: a
// request never written wraps llmfleet.ErrNotDelivered and may be sent
// again; a written one may if it is idempotent, and is otherwise an
// *llmfleet.UncertainError, not retried (the provider may have acted on
// it).
func Unanswered(err error, written, idempotent bool) Try {
	switch {
	case !written:
		return Try{Err: fmt.Errorf("%w: %w", llmfleet.ErrNotDelivered, err), Retry: true}
	case idempotent:
		return Try{Err: err, Retry: true}
	}
	return Try{Err: &llmfleet.UncertainError{Err: err}}
}

// Do calls attempt (n counts attempts from 0) until it succeeds, its
// error may not be retried, MaxRetries retries were made or ctx ends,
// waiting between attempts what the answer asked for, else Backoff. It
// returns the value of the attempt that succeeded, or the error of the
// last one (or ctx's error, as Loop.Bounded says).
func Do[T any](ctx context.Context, l Loop, attempt func(n int) (T, Try)) (T, error) {
	var zero T
	for n := 0; ; n++ {
		v, t := attempt(n)
		if t.Err == nil {
			return v, nil
		}
		if ctx.Err() != nil || !t.Retry || n >= l.MaxRetries {
			return zero, t.Err
		}
		wait := t.Wait
		if !t.Asked {
			wait = Backoff(n)
		}
		if deadline, ok := ctx.Deadline(); l.Bounded && ok && llmfleet.Now(l.Clock).Add(wait).After(deadline) {
			return zero, t.Err // the wait would outlast the call
		}
		if l.Retrying != nil {
			l.Retrying(n+1, t.Err, wait)
		}
		if err := llmfleet.Sleep(ctx, l.Clock, wait); err != nil {
			if l.Bounded {
				return zero, t.Err
			}
			return zero, err
		}
	}
}

// Send sends req with c and reports whether the request was written
// whole, which tells, when there is no answer, whether the provider may
// have acted on it.
func Send(c *http.Client, req *http.Request) (res *http.Response, written bool, err error) {
	var w atomic.Bool
	trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			w.Store(true)
		}
	}}
	res, err = c.Do(req.WithContext(httptrace.WithClientTrace(req.Context(), trace)))
	return res, w.Load(), err
}
