package llmfleet

import "time"

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

// RealClock is the Clock of the time package.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc calls time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
