package dispatch

import (
	"context"
	"time"

	"github.com/llmfleet/llmfleet"
)

// errTimedOut is the cause of a context ended by withTimeout.
var errTimedOut = context.DeadlineExceeded

// withTimeout returns a context that ends after d on clock (never the
// wall clock: tests and the simulator run it virtually).
func withTimeout(clock llmfleet.Clock, parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	t := clock.AfterFunc(d, func() { cancel(errTimedOut) })
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}
