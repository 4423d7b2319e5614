package providertest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// ManualClock is an llmfleet.Clock that moves only when told to: the
// Clock of an emulator and of the provider under test, moved by the Env's
// Advance. It is an llmfleet.Sleeper whose waits take no time: Sleep
// records the wait and returns at once, so that a test sees the waits
// asked for (Slept) without waiting for them. Its methods are safe for
// concurrent use.
type ManualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
	slept  []time.Duration
}

var (
	_ llmfleet.Clock   = (*ManualClock)(nil)
	_ llmfleet.Sleeper = (*ManualClock)(nil)
)

// NewManualClock returns a clock reading start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and runs, in the order of their
// times, the functions of the timers that came due.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*manualTimer
	c.timers = slices.DeleteFunc(c.timers, func(t *manualTimer) bool {
		if t.at.After(c.now) {
			return false
		}
		due = append(due, t)
		return true
	})
	c.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *manualTimer) int { return a.at.Compare(b.at) })
	for _, t := range due {
		t.f()
	}
}

// AfterFunc runs f once the clock has been advanced by d or more.
func (c *ManualClock) AfterFunc(d time.Duration, f func()) llmfleet.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{c: c, at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return t
}

// Sleep records d and returns at once, with ctx's error if ctx has ended:
// the clock does not move.
func (c *ManualClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.slept = append(c.slept, d)
	c.mu.Unlock()
	return ctx.Err()
}

// Slept returns the waits Sleep was asked for, in order.
func (c *ManualClock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.slept)
}

// manualTimer is a timer of a ManualClock.
type manualTimer struct {
	c  *ManualClock
	at time.Time
	f  func()
}

// Stop removes the timer if it has not fired.
func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	n := len(t.c.timers)
	t.c.timers = slices.DeleteFunc(t.c.timers, func(x *manualTimer) bool { return x == t })
	return len(t.c.timers) < n
}
