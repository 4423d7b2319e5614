package dispatch

import (
	"context"
	"errors"

	"github.com/llmfleet/llmfleet"
)

// reconciler finds out what became of creates whose fate is unknown, by
// their tag, and sends back to their pools the requests of those proven
// not created.
type reconciler struct {
	d *Dispatcher
}

// reconcile finds out what became of a create that may or may not have
// made its batch, by its tag: the one reconciler, for a create that just
// failed uncertainly and for an intent a previous process left. It asks
// the provider's FindBatch until it gets an answer it can act on:
//
//   - the batch carrying the tag: it is adopted and tracked;
//   - no such batch, from a list read after the create could no longer
//     land (Policy.Settled: the create's answer, or its deadline when no
//     answer came, plus SettleDelay): the requests go back to their pool,
//     to be sent again without paying twice;
//   - no such batch from an earlier list, ErrUndetermined (a candidate
//     cannot be told apart yet) or a failed list: it asks again later,
//     never concluding anything from them.
//
// It gives up only when the dispatcher closes; the intent then stays
// stored for the next start. Waiting callers keep their own deadlines.
func (rc *reconciler) reconcile(c *createCall) {
	d := rc.d
	settled := d.pol.Settled(c.deadline, c.answeredAt)
	known := func(id string) bool { return d.trackers.trackedBatch(id) }
	q := llmfleet.BatchQuery{Tag: c.localID, Since: c.intentAt, Size: len(c.ws), Known: known}
	next := d.clock.Now().Add(d.pol.SettleDelay)
	for tries := 0; ; tries++ {
		if wait := next.Sub(d.clock.Now()); d.ctx.Err() != nil || wait > 0 && llmfleet.Sleep(d.ctx, d.clock, wait) != nil {
			d.creates.abandon(c)
			return
		}
		askedAt := d.clock.Now()
		ctx, cancel := withTimeout(d.clock, d.ctx, pollTimeout)
		d.stats.managementCalls.Add(1)
		b, err := c.prov.FindBatch(ctx, c.first.Credential, q)
		cancel()
		switch {
		case err == nil && b != nil:
			d.log.Info("uncertain create found by its tag; adopted", "batch", c.localID, "batch_id", b.ID)
			d.creates.created(c, b)
			return
		case err == nil && !askedAt.Before(settled):
			rc.requeue(c)
			return
		case err == nil:
			next = settled // an early list proves nothing
		case errors.Is(err, llmfleet.ErrUndetermined):
			next = d.clock.Now().Add(d.pol.RetryAfter(tries))
		default:
			d.log.Warn("looking for an uncertain create failed; will retry", "batch", c.localID, "err", err)
			next = d.clock.Now().Add(d.pol.RetryAfter(tries))
		}
		if next.Before(settled) && err == nil {
			next = settled
		}
	}
}

// trackedBatch reports whether the provider's batch id is tracked here.
func (ts *trackerSet) trackedBatch(id string) bool {
	d := ts.d
	d.mu.Lock()
	defer d.mu.Unlock()
	return ts.knownIDs[id] || ts.trackedLocked(id)
}

// trackedLocked reports whether a flight of the provider's batch id is
// tracked here.
func (ts *trackerSet) trackedLocked(id string) bool {
	if id == "" {
		return false
	}
	for _, t := range ts.m {
		if t.flights[id] != nil {
			return true
		}
	}
	return false
}

// flyingLocked reports whether a flight of llmfleet's batch localID (or of
// the provider's id, if known) is tracked here.
func (ts *trackerSet) flyingLocked(localID, id string) bool {
	if ts.trackedLocked(id) {
		return true
	}
	for _, t := range ts.m {
		for _, f := range t.flights {
			if f.localID == localID {
				return true
			}
		}
	}
	return false
}

// requeue puts the requests of a batch proven not created back into their
// pools.
func (rc *reconciler) requeue(c *createCall) {
	d := rc.d
	d.log.Info("uncertain create did not make the batch; requeueing", "batch", c.localID, "requests", len(c.ws))
	err := d.journal.requeue(d.ctx, c.localID)
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.creates.creating, c.localID)
	if errors.Is(err, llmfleet.ErrStale) {
		// Another replica found the batch by its tag and tracks it: its
		// answers come from there.
		d.log.Info("uncertain create adopted by another replica", "batch", c.localID)
		for _, w := range c.ws {
			w.advance(stateElsewhere, d.log)
		}
		d.work.end()
		return
	}
	if err != nil {
		d.log.Error("requeue not stored; the next start reconciles the intent again", "batch", c.localID, "err", err)
	}
	var back []*waiter
	for _, w := range c.ws {
		if w.answered && w.state != stateDone {
			// Answered already (the store holds it): the one waiting
			// here is answered from the store; a twin is done with.
			if d.ids.live[w.id] == w {
				w.must(stateElsewhere, d.log)
			} else {
				d.answers.finishLocked(w, nil, nil, nil)
			}
			continue
		}
		if w.abandoned && !d.journal.durable() {
			d.answers.finishLocked(w, nil, context.Canceled, nil) // nobody will read its answer
			continue
		}
		if w.state != stateDone { // (answered meanwhile: by its rescue)
			w.must(stateQueued, d.log)
			back = append(back, w)
		}
	}
	for w, err := range d.pools.enqueueAllLocked(back) {
		d.answers.finishLocked(w, nil, err, nil)
	}
	d.work.end()
}

// abandon answers the waiting callers of an unresolved create when the
// dispatcher closes; the intent stays stored for the next start.
func (cr *creator) abandon(c *createCall) {
	d := cr.d
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(cr.creating, c.localID)
	for _, w := range c.ws {
		d.answers.finishLocked(w, nil, llmfleet.ErrClosed, nil)
	}
	d.work.end()
}
