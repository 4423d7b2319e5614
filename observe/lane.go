package observe

import (
	"context"
	"sync"
	"time"
)

// LaneDelay is how long an item added to an idle Lane waits before the
// lane runs it, with whatever else arrived meanwhile: long enough that
// the lane's goroutine wakes rarely (at 2 ms, serve's added latency at one
// caller was some 10% higher in llmfleet-bench), short enough that
// nothing waits long (readers of what it books settle it first).
const LaneDelay = 50 * time.Millisecond

// Lane runs work handed over by many goroutines on a goroutine of its
// own, a few at a time, in the order it was added: the goroutine answering
// a caller hands its bookkeeping over and goes on, and the bookkeeping of
// many calls is done together, without the answering goroutines
// contending for the locks it takes. Make one with NewLane; Close it when
// done. Its methods are safe for concurrent use.
type Lane[T any] struct {
	do      func(T)
	backlog int

	mu     sync.Mutex // guards queue, armed, closed
	queue  []T
	spare  []T // the array of a queue run, emptied: the next queue's
	armed  bool
	closed bool
	timer  *time.Timer

	run sync.Mutex // held while items run, so that they run in order
}

// NewLane returns a lane that runs do on every item added. When backlog
// items are waiting, the next Add runs them itself rather than let the
// queue grow; backlog ≤ 0 means 1024.
func NewLane[T any](backlog int, do func(T)) *Lane[T] {
	if backlog <= 0 {
		backlog = 1024
	}
	return &Lane[T]{do: do, backlog: backlog}
}

// Add queues x, to be run within LaneDelay. After Close it runs x itself.
func (l *Lane[T]) Add(x T) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.drain(&x)
		return
	}
	if l.queue == nil {
		l.queue, l.spare = l.spare, nil
	}
	l.queue = append(l.queue, x)
	if len(l.queue) >= l.backlog {
		l.mu.Unlock()
		l.Settle()
		return
	}
	if !l.armed {
		l.armed = true
		if l.timer == nil {
			l.timer = time.AfterFunc(LaneDelay, l.Settle)
		} else {
			l.timer.Reset(LaneDelay)
		}
	}
	l.mu.Unlock()
}

// Settle runs every item queued so far, before it returns.
func (l *Lane[T]) Settle() { l.drain(nil) }

// drain runs the items queued, then last if not nil.
func (l *Lane[T]) drain(last *T) {
	l.run.Lock()
	defer l.run.Unlock()
	l.mu.Lock()
	q := l.queue
	l.queue = nil
	l.armed = false
	l.mu.Unlock()
	for _, x := range q {
		l.do(x)
	}
	if last != nil {
		l.do(*last)
	}
	if cap(q) > 0 {
		// The array is kept for the next queue rather than grown anew
		// every LaneDelay; emptied, so that it holds on to nothing.
		clear(q)
		l.mu.Lock()
		l.spare = q[:0]
		l.mu.Unlock()
	}
}

// Close runs what is queued, waiting until ctx ends at most, and makes
// every later Add run its item itself. It returns ctx's error if the
// items queued were not all run in time (they still are, later).
func (l *Lane[T]) Close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
	}
	l.mu.Unlock()
	done := make(chan struct{})
	go func() {
		l.Settle()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
