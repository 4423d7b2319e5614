package simulate

import (
	"cmp"
	"container/heap"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Clock is a virtual clock: an llmfleet.Clock and llmfleet.Sleeper whose
// time moves only in Run, to the next event, and only when nothing runs.
//
// Everything that runs under it is a task: the engine's goroutines (started
// through Go, which a Dispatcher's Go field is set to), and the callbacks
// of timers, which Run calls itself. Tasks run one at a time, in the order
// they became ready, so that a run is deterministic: a task runs until it
// returns or sleeps (Sleep), and then the next ready one runs; when none
// is ready, time moves to the next timer. A task must not block on
// anything but the clock (and short locks).
type Clock struct {
	mu      sync.Mutex
	idle    *sync.Cond // signaled when the running task returns or sleeps
	now     time.Time
	events  events
	seq     uint64
	ready   []func() // tasks to start or wake, in order
	running bool
	// watched are the sleeps whose context may end: after each timer,
	// Run wakes those whose context ended (a timer's callback is what
	// ends a context on this clock, e.g. a timeout), before time moves.
	watched map[*event]context.Context
}

// NewClock returns a clock that reads start.
func NewClock(start time.Time) *Clock {
	c := &Clock{now: start, watched: map[*event]context.Context{}}
	c.idle = sync.NewCond(&c.mu)
	return c
}

// Now returns the virtual time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc calls f in Run once the clock reaches d from now.
func (c *Clock) AfterFunc(d time.Duration, f func()) llmfleet.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pushLocked(d, f)
}

// afterKeyed is AfterFunc for the simulator's own events: among the
// events due at one time they run after the engine's, ordered by key, so
// that their order does not depend on the order they were set in.
func (c *Clock) afterKeyed(d time.Duration, key uint64, f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.pushLocked(d, f)
	e.keyed, e.key = true, key
	heap.Fix(&c.events, e.index)
}

func (c *Clock) pushLocked(d time.Duration, f func()) *event {
	c.seq++
	at := c.now.Add(max(d, 0))
	e := &event{c: c, at: at, nanos: at.UnixNano(), seq: c.seq, f: f}
	heap.Push(&c.events, e)
	return e
}

// Go runs f as a task of its own, after the tasks ready before it.
func (c *Clock) Go(f func()) {
	c.mu.Lock()
	c.ready = append(c.ready, func() { go c.task(f) })
	c.mu.Unlock()
}

func (c *Clock) task(f func()) {
	defer c.yield()
	f()
}

// yield marks the running task as no longer running.
func (c *Clock) yield() {
	c.mu.Lock()
	c.running = false
	c.idle.Signal()
	c.mu.Unlock()
}

// Sleep waits d on the virtual clock, or until ctx ends. It is for tasks
// (and is what the engine waits with, as an llmfleet.Sleeper): the next
// task runs while it sleeps. A context that a timer's callback ends (a
// timeout on this clock) wakes its sleep at that virtual time, in turn; one
// ended from outside the clock's tasks wakes it as soon as it ends.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	wake := make(chan struct{})
	c.mu.Lock()
	e := c.pushLocked(d, nil)
	e.wake = wake
	if ctx.Done() != nil {
		c.watched[e] = ctx
	}
	c.running = false
	c.idle.Signal()
	c.mu.Unlock()
	select {
	case <-wake:
		c.mu.Lock()
		canceled := e.canceled
		c.mu.Unlock()
		if canceled {
			return ctx.Err()
		}
		return nil
	case <-ctx.Done():
	}
	c.mu.Lock()
	delete(c.watched, e)
	if e.index >= 0 || e.queued {
		// Not woken yet: take it out and run on (marked running, so
		// that Run waits for it).
		if e.index >= 0 {
			heap.Remove(&c.events, e.index)
		}
		e.wake = nil // a queued wake-up becomes a no-op
		c.mu.Unlock()
		c.waitTurn()
		return ctx.Err()
	}
	c.mu.Unlock()
	<-wake // woken at the same moment: Run marked it running
	return ctx.Err()
}

// waitTurn waits until no task runs and marks the caller running.
func (c *Clock) waitTurn() {
	c.mu.Lock()
	for c.running {
		c.idle.Wait()
	}
	c.running = true
	c.mu.Unlock()
}

// Run runs the tasks and timers until none is left, then returns.
func (c *Clock) Run() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		for c.running {
			c.idle.Wait()
		}
		if len(c.ready) > 0 {
			next := c.ready[0]
			c.ready[0] = nil
			c.ready = c.ready[1:]
			c.running = true
			c.mu.Unlock()
			next()
			c.mu.Lock()
			continue
		}
		if len(c.events) == 0 {
			return
		}
		e := heap.Pop(&c.events).(*event)
		if e.at.After(c.now) {
			c.now = e.at
		}
		if e.wake != nil {
			c.wakeLocked(e)
			continue
		}
		c.running = true
		c.mu.Unlock()
		e.f()
		c.mu.Lock()
		c.running = false
		c.reapLocked()
	}
}

// wakeLocked queues the end of a sleep.
func (c *Clock) wakeLocked(e *event) {
	delete(c.watched, e)
	e.queued = true
	c.ready = append(c.ready, func() {
		c.mu.Lock()
		ch := e.wake
		e.queued = false
		c.mu.Unlock()
		if ch == nil { // its sleep ended with its context already
			c.yield()
			return
		}
		close(ch)
	})
}

// reapLocked wakes the sleeps whose context ended, in the order they
// began.
func (c *Clock) reapLocked() {
	var done []*event
	for e, ctx := range c.watched {
		if ctx.Err() != nil && e.index >= 0 {
			done = append(done, e)
		}
	}
	slices.SortFunc(done, func(a, b *event) int { return cmp.Compare(a.seq, b.seq) })
	for _, e := range done {
		heap.Remove(&c.events, e.index)
		e.canceled = true
		c.wakeLocked(e)
	}
}

// event is a timer, or the end of a sleep (wake set).
type event struct {
	c        *Clock
	at       time.Time
	nanos    int64 // at, to compare fast
	seq      uint64
	f        func()
	wake     chan struct{}
	keyed    bool   // a simulator event, ordered by key
	key      uint64 //
	index    int    // in the heap; -1 when not in it
	queued   bool   // a sleep's end, popped and waiting to run
	canceled bool   // a sleep ended by its context
}

// Stop takes the timer out; false if it fired or was stopped.
func (e *event) Stop() bool {
	c := e.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.index < 0 {
		return false
	}
	heap.Remove(&c.events, e.index)
	return true
}

type events []*event

func (h events) Len() int { return len(h) }
func (h events) Less(i, j int) bool {
	if h[i].nanos != h[j].nanos {
		return h[i].nanos < h[j].nanos
	}
	if h[i].keyed != h[j].keyed {
		return h[j].keyed
	}
	if h[i].keyed && h[i].key != h[j].key {
		return h[i].key < h[j].key
	}
	return h[i].seq < h[j].seq
}
func (h events) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *events) Push(x any) {
	e := x.(*event)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *events) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.index = -1
	*h = old[:len(old)-1]
	return e
}

var (
	_ llmfleet.Clock   = (*Clock)(nil)
	_ llmfleet.Sleeper = (*Clock)(nil)
)
