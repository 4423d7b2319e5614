package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// accept makes w durable, then pools it; its pool window starts once it
// is durable, so that requests that waited on the store together still
// share a batch. A request whose budget cannot hold a batch with its
// rescue (Policy.Batchable) is never pooled: it is sent sync at once,
// stored (with a durable journal) as submitted without a batch.
//
// The store's write is bounded by the budget (see acceptBound): a caller
// that waits for the answer and whose request the store has not taken
// by its rescue time is answered sync (sent at once; the write is
// canceled, and should it land all the same, the request is completed
// with that answer, never batched). A ticket, or a retry whose id may be
// stored already, must be stored before anything is sent: one the store
// has not taken by its deadline fails with llmfleet.ErrStore.
func (d *Dispatcher) accept(ctx context.Context, w *waiter) error {
	if err := d.pools.checkSize(w); err != nil {
		return err
	}
	now := d.clock.Now()
	d.mu.Lock()
	closed, opened := d.closed, d.opened
	if opened {
		w.direct = !d.pol.Batchable(now, w.deadline, d.syncLat.predict(w.prov.Name(), w.info.Model))
	}
	d.mu.Unlock()
	switch {
	case !opened:
		return fmt.Errorf("dispatch: Submit before Open")
	case closed:
		return llmfleet.ErrClosed
	}
	if !d.journal.durable() {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.admitLocked(w)
	}
	d.mu.Lock()
	reserved := d.ids.reserveLocked(w)
	d.mu.Unlock()
	if !reserved {
		return errIDTaken
	}
	cancel := d.startAdd(ctx, w)
	bound, waits := d.acceptBound(w, now)
	if !d.awaitAdd(w, bound) {
		if !waits {
			// Answered sync, now: the write is given up (if it lands all
			// the same, settleSync completes it with the answer).
			if !w.direct {
				cancel()
				d.log.Warn("the store did not take a request in time; sending it sync", "request_id", w.id,
					"budget", w.budget, "model", w.info.Model)
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			d.sendNowLocked(w)
			return nil
		}
		cancel()
		<-w.added // the outcome is certain once the write answers
	}
	if err := w.addErr; err != nil {
		d.mu.Lock()
		d.ids.releaseLocked(w, nil, err)
		d.mu.Unlock()
		switch {
		case errors.Is(err, llmfleet.ErrExists):
			return errIDTaken // stored before: the caller attaches to it
		case ctx.Err() == nil && !bound.IsZero() && !d.clock.Now().Before(bound):
			return fmt.Errorf("%w: the database did not take the request within its latency budget (%s): %w", llmfleet.ErrStore, w.budget, err)
		}
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.admitLocked(w)
}

// startAdd starts the store's write of w in a goroutine of the
// dispatcher's, under a context derived from ctx, and returns the
// function that cancels it. w.added is closed when the write is over.
func (d *Dispatcher) startAdd(ctx context.Context, w *waiter) context.CancelFunc {
	actx, cancel := context.WithCancel(ctx)
	w.added = make(chan struct{})
	d.work.run(func() {
		w.addErr = d.journal.accept(actx, w)
		close(w.added)
	})
	return cancel
}

// acceptBound returns until when accept waits for the store's write of
// w (zero: for as long as it takes, or until its caller leaves), and
// whether the request must wait for its write then (true), or is sent
// sync without it (false):
//
//   - a ticket (detached), or a retry of a request that may be stored
//     already (Request.Retry: its id is known free only once stored): its
//     deadline, then it waits for the write's outcome, certain once the
//     canceled write answers;
//   - a request sent sync at once (direct): now, sent without waiting;
//   - any other: its rescue time (Policy.RescueAt), when a sync call
//     must start to keep its budget.
func (d *Dispatcher) acceptBound(w *waiter, now time.Time) (time.Time, bool) {
	switch {
	case w.detached || w.retry:
		return w.deadline, true
	case w.direct:
		return now, false
	}
	return d.pol.RescueAt(w.deadline, d.syncLat.predict(w.prov.Name(), w.info.Model)), false
}

// awaitAdd waits until the store's write of w is over, or until bound
// (zero: no bound) on the dispatcher's clock; false if bound came first.
func (d *Dispatcher) awaitAdd(w *waiter, bound time.Time) bool {
	if bound.IsZero() {
		<-w.added
		return true
	}
	select {
	case <-w.added:
		return true
	default:
	}
	wait := bound.Sub(d.clock.Now())
	if wait <= 0 {
		return false
	}
	tick := make(chan struct{})
	t := d.clock.AfterFunc(wait, func() { close(tick) })
	defer t.Stop()
	select {
	case <-w.added:
		return true
	case <-tick:
		return false
	}
}

// admitLocked takes charge of an accepted request: it is sent sync at
// once if it is direct (or became so while the store took it), else it
// is pooled and its rescue armed.
func (d *Dispatcher) admitLocked(w *waiter) error {
	now := d.clock.Now()
	if w.direct || !d.pol.Batchable(now, w.deadline, d.syncLat.predict(w.prov.Name(), w.info.Model)) {
		d.sendNowLocked(w)
		return nil
	}
	w.accepted = now
	if err := d.pools.enqueueLocked(w); err != nil {
		return err
	}
	d.rescues.armLocked(w)
	d.stats.batchedCalls.Add(1)
	return nil
}

// sendNowLocked sends w sync at once, in a goroutine of the dispatcher's,
// and records its answer (settleSync).
func (d *Dispatcher) sendNowLocked(w *waiter) {
	w.must(stateSync, d.log)
	w.sentSync = true
	d.work.begin()
	d.work.run(func() {
		defer d.work.end()
		a := d.calls.batched(w)
		d.settleSync(a)
	})
}

// settleSync records the answer of a request sent sync at once, and
// answers its caller: stored as its result (with its ledger entry) once
// the store's write of the request is over and stored it; its ledger
// entry alone if the write failed. While that waits, or the store fails,
// the caller is answered from the answer in hand, and the recording is
// tried again until it is done.
func (d *Dispatcher) settleSync(a answer) {
	w := a.w
	if w.added == nil { // no durable journal
		d.answers.deliver([]answer{a}, "", nil)
		return
	}
	select {
	case <-w.added:
		if w.stored() && d.answers.deliver([]answer{a}, "", nil) {
			return
		}
	default:
	}
	d.answers.hold(a, true)
	d.answers.retry(func() bool {
		<-w.added
		if w.stored() {
			return d.answers.deliver([]answer{a}, "", nil)
		}
		return d.recordUnstored(a)
	})
}

// recordUnstored records the ledger entry of a request sent sync whose
// write the store never made, and finishes its waiter; false if the
// entry could not be recorded.
func (d *Dispatcher) recordUnstored(a answer) bool {
	e := d.answers.entry(a.w, a.resp, a.err, d.clock.Now(), llmfleet.RescueNone)
	if err := d.journal.ledger(d.ctx, []llmfleet.LedgerEntry{e}); err != nil {
		d.log.Warn("ledger entry of a request sent sync not stored; will retry", "request_id", a.w.id, "err", err)
		return false
	}
	d.mu.Lock()
	d.answers.finishLocked(a.w, a.resp, a.err, &e)
	d.mu.Unlock()
	return true
}
