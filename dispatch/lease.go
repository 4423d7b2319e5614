package dispatch

import (
	"context"
	"time"

	"github.com/llmfleet/llmfleet"
)

// leaseHolder is the replica's lease, with a SharedStore: until when it
// holds it as far as it knows, and the rescues waiting for its renewal,
// which it asks the fleet loop for. Guarded by the dispatcher's lock.
type leaseHolder struct {
	d        *Dispatcher
	until    time.Time
	deferred []*waiter
	// wake ends the fleet loop's current wait (nil: none); asked is set
	// when a renewal was asked for while it was not waiting.
	wake  context.CancelFunc
	asked bool
}

// A replica's lease, with a SharedStore. What a replica owns in the
// store (its queued requests and batches) passes to another once its
// lease ends; a replica cut off, or paused, for longer than its lease
// must not act on what it may no longer own. So it holds its lease, as
// far as it knows, until the time it last renewed it (measured when the
// renewal was sent) plus Dispatcher.Lease; past that, a rescue (the one
// act that pays) waits for the next renewal, which the fleet loop makes
// at once. A renewal that finds the lease ended makes the replica give
// up what it holds in memory (relinquishLocked) and take back, by Adopt,
// what no other replica took meanwhile; the rescues that waited then
// check the store first (see answeredInStore), so that none pays for an
// answer another replica stored.

// leaseHeldLocked reports whether this replica holds its lease, as far
// as it knows: always without a SharedStore.
func (l *leaseHolder) leaseHeldLocked() bool {
	d := l.d
	return d.shared == nil || d.clock.Now().Before(l.until)
}

// deferLocked makes w's rescue wait for the next renewal of the lease,
// and asks the fleet loop for it now.
func (l *leaseHolder) deferLocked(w *waiter) {
	l.deferred = append(l.deferred, w)
	l.asked = true
	if l.wake != nil {
		l.wake()
	}
}

// runDeferred makes the rescues that waited for the lease.
func (l *leaseHolder) runDeferred() {
	d := l.d
	d.mu.Lock()
	defer d.mu.Unlock()
	ws := l.deferred
	l.deferred = nil
	for _, w := range ws {
		// Renewed, or not (the store unreachable): budgets first; each
		// rescue still looks in the store before it pays.
		d.tryRescueLocked(w, false)
	}
}

// relinquishLocked gives up what this replica held in memory once it
// found its lease ended: the batches it tracked and the requests in its
// pools may be another replica's now. Their waiters wait elsewhere (a
// caller here is answered when the answer is stored, or rescued at its
// time); what no replica adopted meanwhile comes back by Adopt.
func (l *leaseHolder) relinquishLocked() {
	d := l.d
	for key, t := range d.trackers.m {
		t.stop()
		for id, f := range t.flights {
			for _, w := range f.waiters {
				w.to(stateElsewhere)
			}
			delete(t.flights, id)
			d.endWorkLocked()
		}
		if !t.busy {
			delete(d.trackers.m, key)
		}
	}
	for key, pl := range d.pools.m {
		pl.stopTimer()
		for _, w := range pl.items {
			w.to(stateElsewhere)
			w.pool = nil
			d.stats.queueDepth.Add(-1)
		}
		delete(d.pools.m, key)
	}
}

// wait waits on the dispatcher's clock for every, or until a renewal is
// asked for (deferLocked), also while it was not waiting; false if the
// dispatcher closed first.
func (l *leaseHolder) wait(every time.Duration) bool {
	d := l.d
	ctx, cancel := context.WithCancel(d.ctx)
	defer cancel()
	d.mu.Lock()
	if l.asked {
		cancel()
	}
	l.asked, l.wake = false, cancel
	d.mu.Unlock()
	llmfleet.Sleep(ctx, d.clock, every)
	d.mu.Lock()
	l.wake = nil
	d.mu.Unlock()
	return d.ctx.Err() == nil
}
