package dispatch

import (
	"context"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// A replica's lease, with a SharedStore. What a replica owns in the
// store (its queued requests and batches) passes to another once its
// lease ends; a replica cut off, or paused, for longer than its lease
// must not act on what it may no longer own. So it holds its lease, as
// far as it knows, until the time it last renewed it (measured when the
// renewal was sent) plus Dispatcher.Lease; past that, a rescue (the one
// act that pays) waits for the next renewal, which the fleet loop makes
// at once. A renewal that finds the lease ended makes the replica give
// up what it holds in memory (its pools' and trackers'
// relinquishLocked) and take back, by Adopt, what no other replica took
// meanwhile; the rescues that waited then check the store first (see
// answeredInStore), so that none pays for an answer another replica
// stored.

// leaseHolder is the replica's lease, with a SharedStore: until when it
// holds it as far as it knows, and the rescues waiting for its renewal,
// which it asks the fleet loop for. It has its own lock, which may be
// taken under the dispatcher's.
type leaseHolder struct {
	clock  llmfleet.Clock
	shared bool // with a SharedStore; without one the lease is always held

	mu       sync.Mutex
	until    time.Time
	deferred []*waiter
	// wake ends the fleet loop's current wait (nil: none); asked is set
	// when a renewal was asked for while it was not waiting.
	wake  context.CancelFunc
	asked bool
	// lost counts the renewals that found the lease ended (see
	// creator.created).
	lost int
	// renewing is set from a renewal's call to the store until the
	// replica gave up what it held, if the lease had ended; idle is
	// closed then (see settled).
	renewing bool
	idle     chan struct{}
	awaiting int // creators waiting in settled (for tests)
}

// beginRenewal marks a renewal under way: the store may start a new run
// (a new owner token) before the replica gives up what it held.
func (l *leaseHolder) beginRenewal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.renewing, l.idle = true, make(chan struct{})
}

// endRenewal marks the renewal done: ended has been called, if the lease
// had ended.
func (l *leaseHolder) endRenewal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.renewing {
		l.renewing = false
		close(l.idle)
	}
}

// settled returns once no renewal is under way, or ctx ended: a batch
// recorded created while a renewal was under way may have been recorded
// under the new run's token, and is then tracked only after that
// renewal gave up what the replica held (creator.created).
func (l *leaseHolder) settled(ctx context.Context) {
	l.mu.Lock()
	if !l.renewing {
		l.mu.Unlock()
		return
	}
	idle := l.idle
	l.awaiting++
	l.mu.Unlock()
	select {
	case <-idle:
	case <-ctx.Done():
	}
	l.mu.Lock()
	l.awaiting--
	l.mu.Unlock()
}

// start sets whether there is a lease to hold, and until when it is held.
func (l *leaseHolder) start(shared bool, until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.shared, l.until = shared, until
}

// ended records a renewal that found the lease ended, once the replica
// gave up what it held.
func (l *leaseHolder) ended() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lost++
}

// losses returns how many renewals found the lease ended so far.
func (l *leaseHolder) losses() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// renewed records a renewal: the lease is held until then.
func (l *leaseHolder) renewed(until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.until = until
}

// held reports whether this replica holds its lease, as far as it knows:
// always without a SharedStore.
func (l *leaseHolder) held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.shared || l.clock.Now().Before(l.until)
}

// deferRescue makes w's rescue wait for the next renewal of the lease,
// and asks the fleet loop for it now.
func (l *leaseHolder) deferRescue(w *waiter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deferred = append(l.deferred, w)
	l.asked = true
	if l.wake != nil {
		l.wake()
	}
}

// takeDeferred returns the rescues that waited for the lease, and forgets
// them.
func (l *leaseHolder) takeDeferred() []*waiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	ws := l.deferred
	l.deferred = nil
	return ws
}

// wait waits on the clock for every, or until a renewal is asked for
// (deferRescue), also while it was not waiting; false if ctx (the
// dispatcher's) ended first.
func (l *leaseHolder) wait(ctx context.Context, every time.Duration) bool {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	l.mu.Lock()
	if l.asked {
		cancel()
	}
	l.asked, l.wake = false, cancel
	l.mu.Unlock()
	llmfleet.Sleep(sctx, l.clock, every)
	l.mu.Lock()
	l.wake = nil
	l.mu.Unlock()
	return ctx.Err() == nil
}
