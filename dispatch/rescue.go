package dispatch

import (
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Deadline rescue: a batched request whose answer is not in by its
// deadline less its model's predicted sync latency and a margin
// (Policy.RescueAt) is sent sync as well. The first answer is delivered
// and stored; the other, when it comes, is recorded in the ledger as paid
// and not delivered (llmfleet.RescueLate). A request still in its pool
// when it is rescued leaves the pool, so that no batch pays for it.

// rescuer rescues batched requests late for their deadline: it arms and
// stops their rescue timers (guarded by the dispatcher's lock, as the
// waiters are), makes the rescue's sync call in a goroutine of the
// dispatcher's, and hands its answer to the answerer, or records it as
// paid and not delivered.
type rescuer struct{ d *Dispatcher }

// syncLatencyQuantile is the quantile of a model's sync latencies that
// its rescue reserves before the deadline.
const syncLatencyQuantile = 0.95

// armLocked sets w's rescue timer, if it has a deadline.
func (rs *rescuer) armLocked(w *waiter) {
	d := rs.d
	at := d.pol.RescueAt(w.deadline, d.syncLat.predict(w.prov.Name(), w.info.Model))
	if at.IsZero() {
		return
	}
	w.rescueTimer = d.clock.AfterFunc(max(at.Sub(d.clock.Now()), 0), func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		rs.fireLocked(w)
	})
}

// stopLocked stops w's rescue timer.
func (rs *rescuer) stopLocked(w *waiter) {
	if w.rescueTimer != nil {
		w.rescueTimer.Stop()
		w.rescueTimer = nil
	}
}

// fireLocked sends w sync, unless it was answered or is being rescued.
// A waiter whose answer is in hand, not stored yet, is answered from it
// instead: its result is not paid for again.
func (rs *rescuer) fireLocked(w *waiter) { rs.tryLocked(w, true) }

// tryLocked is fireLocked; with leased, a rescue waits for the
// lease when it is not known to be held (see lease.go).
func (rs *rescuer) tryLocked(w *waiter, leased bool) {
	d := rs.d
	w.rescueTimer = nil
	if w.state == stateDone || w.rescuing || d.ctx.Err() != nil || d.closed {
		return
	}
	if d.answers.replyHeldLocked(w) {
		return
	}
	if leased && !d.lease.held() {
		// What this replica acts on may be another's by now: the rescue
		// waits for the lease to be renewed (see fence).
		d.lease.deferRescue(w)
		return
	}
	w.rescuing = true
	if w.state == stateQueued {
		d.pools.withdrawLocked(w)
	}
	d.log.Info("batched request late; rescuing it sync", "request_id", w.id, "state", w.state.String(),
		"deadline", w.deadline, "model", w.info.Model)
	d.work.begin()
	d.work.run(func() { rs.run(w) })
}

// run makes the sync call of a rescue and delivers its answer, or
// records it as late if the batch answered first. A rescue that fails
// leaves the request to its batch (a request withdrawn from its pool goes
// back into it) and its caller to its deadline. With a SharedStore, a
// request another replica answered meanwhile is answered from the store,
// without a call.
func (rs *rescuer) run(w *waiter) {
	d := rs.d
	defer d.work.end()
	if rs.answeredInStore(w) {
		return
	}
	start := d.clock.Now()
	a := d.calls.batched(w)
	if a.err != nil {
		d.log.Warn("rescue failed; the request waits for its batch", "request_id", w.id, "err", a.err)
		if mayBeBilled(a.err) {
			rs.recordCut(w, a.err, start)
		}
		d.mu.Lock()
		if w.state == stateQueued && !w.pool.has(w) {
			if eerr := d.pools.enqueueLocked(w); eerr != nil {
				d.answers.finishLocked(w, nil, fmt.Errorf("%w (rescue failed: %v)", eerr, a.err), nil)
			}
		}
		d.mu.Unlock()
		return
	}
	a.rescue = true
	if !d.answers.deliver([]answer{a}, "", nil) {
		// Not stored yet: its caller gets it now, and its delivery is
		// tried again (the batch's answer, should it be stored first,
		// makes this one late).
		d.answers.hold(a, true)
		d.answers.retry(func() bool { return d.answers.deliver([]answer{a}, "", nil) })
	}
}

// answeredInStore reports whether w's request, with a SharedStore, was
// answered by another replica (its result is stored), and if so finishes
// w with that answer.
func (rs *rescuer) answeredInStore(w *waiter) bool {
	d := rs.d
	if d.shared == nil {
		return false
	}
	sr, err := d.Store.GetRequest(d.ctx, w.id)
	if err != nil || sr.Result == nil {
		return false
	}
	resp, rerr := storedAnswer(sr)
	d.mu.Lock()
	defer d.mu.Unlock()
	if w.delivering {
		return false
	}
	if w.state == stateQueued {
		d.pools.withdrawLocked(w)
	}
	d.answers.finishLocked(w, resp, rerr, nil)
	return true
}

// recordCut records the sync call of w's rescue, made at start and
// cut with err after it may have reached the provider, as paid and not
// delivered, its usage estimated from its body (LedgerEntry.Estimated).
func (rs *rescuer) recordCut(w *waiter, err error, start time.Time) {
	d := rs.d
	now := d.clock.Now()
	e := llmfleet.LedgerEntry{RequestID: w.id, Time: now, Provider: w.prov.Name(),
		Model: w.info.Model, Route: llmfleet.RouteSync, Outcome: llmfleet.Outcome(err), Latency: now.Sub(start),
		Client: w.req.Client}.PaidUndelivered(len(w.plain))
	d.paid.record([]llmfleet.LedgerEntry{d.answers.price(e)})
}
