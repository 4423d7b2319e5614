package dispatch

import (
	"fmt"

	"github.com/llmfleet/llmfleet"
)

// Deadline rescue: a batched request whose answer is not in by its
// deadline less its model's predicted sync latency and a margin
// (Policy.RescueAt) is sent sync as well. The first answer is delivered
// and stored; the other, when it comes, is recorded in the ledger as paid
// and not delivered (llmfleet.RescueLate). A request still in its pool
// when it is rescued leaves the pool, so that no batch pays for it.

// syncLatencyQuantile is the quantile of a model's sync latencies that
// its rescue reserves before the deadline.
const syncLatencyQuantile = 0.95

// armRescueLocked sets w's rescue timer, if it has a deadline.
func (d *Dispatcher) armRescueLocked(w *waiter) {
	at := d.pol.RescueAt(w.deadline, d.syncLat.predict(w.prov.Name(), w.info.Model))
	if at.IsZero() {
		return
	}
	w.rescueTimer = d.clock.AfterFunc(max(at.Sub(d.clock.Now()), 0), func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.rescueLocked(w)
	})
}

// stopRescueLocked stops w's rescue timer.
func (d *Dispatcher) stopRescueLocked(w *waiter) {
	if w.rescueTimer != nil {
		w.rescueTimer.Stop()
		w.rescueTimer = nil
	}
}

// rescueLocked sends w sync, unless it was answered or is being rescued.
func (d *Dispatcher) rescueLocked(w *waiter) {
	w.rescueTimer = nil
	if w.state == stateDone || w.rescuing || d.ctx.Err() != nil || d.closed {
		return
	}
	w.rescuing = true
	if w.state == stateQueued {
		d.withdrawLocked(w)
	}
	d.log.Info("batched request late; rescuing it sync", "request_id", w.id, "state", w.state.String(),
		"deadline", w.deadline, "model", w.info.Model)
	d.beginWorkLocked()
	d.goOwned(func() { d.rescue(w) })
}

// rescue makes the sync call of a rescue and delivers its answer, or
// records it as late if the batch answered first. A rescue that fails
// leaves the request to its batch (a request withdrawn from its pool goes
// back into it) and its caller to its deadline.
func (d *Dispatcher) rescue(w *waiter) {
	defer func() {
		d.mu.Lock()
		d.endWorkLocked()
		d.mu.Unlock()
	}()
	wait := w.deadline.Sub(d.clock.Now())
	if wait <= 0 {
		wait = d.pol.RescueMargin
	}
	ctx, cancel := d.withTimeout(d.ctx, wait)
	req := &llmfleet.Request{Provider: w.req.Provider, Credential: w.req.Credential, Header: w.req.Header, Endpoint: w.req.Endpoint, Body: w.params, Client: w.req.Client}
	start := d.clock.Now()
	d.stats.syncCalls.Add(1)
	resp, err := w.prov.Send(ctx, req)
	cancel()
	now := d.clock.Now()
	if err != nil {
		d.log.Warn("rescue failed; the request waits for its batch", "request_id", w.id, "err", err)
		d.mu.Lock()
		if w.state == stateQueued && !w.pool.has(w) {
			if eerr := d.enqueueLocked(w); eerr != nil {
				d.finishLocked(w, nil, fmt.Errorf("%w (rescue failed: %v)", eerr, err), nil)
			}
		}
		d.mu.Unlock()
		return
	}
	if !d.pol.NoLearning {
		d.syncLat.observe(w.prov.Name(), resp.Model, now.Sub(start))
	}
	resp.Route = llmfleet.RouteSync
	resp.RequestID = w.id
	a := answer{w: w, resp: resp, rescue: true}
	if !d.deliver([]answer{a}, "", nil) {
		// Not stored: the batch still answers the request, and the paid
		// sync answer is recorded as late rather than lost.
		d.recordLate([]answer{a})
	}
}

// recordLate records answers that came second as paid, not delivered, at
// the route they came by.
func (d *Dispatcher) recordLate(answers []answer) {
	now := d.clock.Now()
	entries := make([]llmfleet.LedgerEntry, 0, len(answers))
	for _, a := range answers {
		if a.resp == nil {
			continue // an error is not billed
		}
		e := d.entry(a.w, a.resp, nil, now, llmfleet.RescueLate)
		e.Budget, e.BudgetMet = 0, true // its request is judged by the answer it got
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return
	}
	if err := d.journal.ledger(d.ctx, entries); err != nil {
		d.log.Error("late answers not recorded in the ledger", "entries", len(entries), "err", err)
	}
	if d.Observe != nil {
		d.mu.Lock()
		for _, e := range entries {
			d.Observe(e, d.journal.durable())
		}
		d.mu.Unlock()
	}
}
