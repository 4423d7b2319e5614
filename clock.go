package llmfleet

import (
	"context"
	"time"
)

// Clock tells the time and starts timers. Engines take one so that tests
// can control time; a nil Clock means the real one.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a timer started by a Clock.
type Timer interface {
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
}

// Sleeper is implemented by a Clock that must see every wait on it, such
// as a simulator's virtual clock, which advances time only while nothing
// runs: Sleep waits d on the clock, or until ctx ends (then it returns
// ctx's error). Code that blocks on a Clock (the dispatcher's waits, a
// simulated provider's calls) sleeps through it when the Clock implements
// it, and with AfterFunc otherwise.
type Sleeper interface {
	Sleep(ctx context.Context, d time.Duration) error
}

// RealClock is the Clock of the time package.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc calls time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Now returns the time on clock, the real one when nil: what a
// zero-value config's optional Clock field tells.
func Now(clock Clock) time.Time {
	if clock == nil {
		return time.Now()
	}
	return clock.Now()
}

// Sleep waits d on clock (the real one when nil), or until ctx ends, when
// it returns ctx's error. It is the one way code here waits on a Clock: a
// Clock that is a Sleeper (a simulation's) sees the wait itself; any
// other is waited on through AfterFunc.
func Sleep(ctx context.Context, clock Clock, d time.Duration) error {
	if clock == nil {
		clock = RealClock{}
	}
	if s, ok := clock.(Sleeper); ok {
		return s.Sleep(ctx, d)
	}
	if d <= 0 {
		return ctx.Err()
	}
	done := make(chan struct{})
	t := clock.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}
