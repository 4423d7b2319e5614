package dispatch

import (
	"time"
)

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
func (d *Dispatcher) leaseHeldLocked() bool {
	return d.shared == nil || d.clock.Now().Before(d.leaseUntil)
}

// deferLocked makes w's rescue wait for the next renewal of the lease,
// and asks the fleet loop for it now.
func (d *Dispatcher) deferLocked(w *waiter) {
	d.deferred = append(d.deferred, w)
	select {
	case d.renew <- struct{}{}:
	default:
	}
}

// runDeferred makes the rescues that waited for the lease.
func (d *Dispatcher) runDeferred() {
	d.mu.Lock()
	defer d.mu.Unlock()
	ws := d.deferred
	d.deferred = nil
	for _, w := range ws {
		// Renewed, or not (the store unreachable): budgets first; each
		// rescue still looks in the store before it pays.
		d.rescues.tryLocked(w, false)
	}
}

// relinquishLocked gives up what this replica held in memory once it
// found its lease ended: the batches it tracked and the requests in its
// pools may be another replica's now. Their waiters wait elsewhere (a
// caller here is answered when the answer is stored, or rescued at its
// time); what no replica adopted meanwhile comes back by Adopt.
func (d *Dispatcher) relinquishLocked() {
	for key, t := range d.trackers {
		t.stop()
		for id, f := range t.flights {
			for _, w := range f.waiters {
				w.advance(stateElsewhere, d.log)
			}
			delete(t.flights, id)
			d.work.end()
		}
		if !t.busy {
			delete(d.trackers, key)
		}
	}
	for key, pl := range d.pools {
		pl.stopTimer()
		for _, w := range pl.items {
			w.must(stateElsewhere, d.log)
			w.pool = nil
			d.stats.queueDepth.Add(-1)
		}
		delete(d.pools, key)
	}
}

// sleepOr waits on the dispatcher's clock for wait, or until wake is
// signalled; false if the dispatcher closed first.
func (d *Dispatcher) sleepOr(wait time.Duration, wake <-chan struct{}) bool {
	tick := make(chan struct{})
	t := d.clock.AfterFunc(wait, func() { close(tick) })
	defer t.Stop()
	select {
	case <-tick:
		return true
	case <-wake:
		return d.ctx.Err() == nil
	case <-d.ctx.Done():
		return false
	}
}
