package dispatch

import (
	"context"
	"time"

	"github.com/llmfleet/llmfleet"
)

// errTimedOut is the cause of a context ended by withTimeout.
var errTimedOut = context.DeadlineExceeded

// withTimeout returns a context that ends after d on the dispatcher's
// clock (never the wall clock: tests and the simulator run it virtually).
func (d *Dispatcher) withTimeout(parent context.Context, dur time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	t := d.clock.AfterFunc(dur, func() { cancel(errTimedOut) })
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}

// sleep waits on the dispatcher's clock; false if the dispatcher closed
// first.
func (d *Dispatcher) sleep(wait time.Duration) bool {
	return d.sleepUntil(d.clock.Now().Add(wait))
}

// sleepUntil waits until at on the dispatcher's clock; false if the
// dispatcher closed first.
func (d *Dispatcher) sleepUntil(at time.Time) bool {
	wait := at.Sub(d.clock.Now())
	if wait <= 0 {
		return d.ctx.Err() == nil
	}
	if s, ok := d.clock.(llmfleet.Sleeper); ok {
		return s.Sleep(d.ctx, wait) == nil
	}
	tick := make(chan struct{})
	t := d.clock.AfterFunc(wait, func() { close(tick) })
	select {
	case <-tick:
		return true
	case <-d.ctx.Done():
		t.Stop()
		return false
	}
}
