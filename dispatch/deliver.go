package dispatch

import (
	"errors"
	"net/http"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/ledger"
)

// answer is what one waiter is to be answered with.
type answer struct {
	w      *waiter
	resp   *llmfleet.Response
	err    error
	rescue bool // the answer of a rescue's sync call
}

// deliver stores the answers with their ledger entries in one
// transaction, then, under the lock, calls then (if not nil), answers
// their callers and observes the entries. An answer to a request that a
// rescue (or its batch) answered first is recorded as late instead, once
// the others are stored. If they cannot be stored nobody is answered and
// it returns false: the caller tries again later, so that no answer is
// given that a restart would not find.
func (d *Dispatcher) deliver(answers []answer, batchID string, then func()) bool {
	var late []answer
	d.mu.Lock()
	live := answers[:0:0]
	for _, a := range answers {
		if a.w.state == stateDone && (a.w.rescuing || a.rescue) {
			late = append(late, a)
		} else {
			live = append(live, a)
		}
	}
	for _, a := range live {
		// Its answer is this process's to give, even if the store's
		// announcement of it comes first (look skips it).
		a.w.delivering = true
	}
	d.mu.Unlock()
	answers = live
	now := d.clock.Now()
	done := make([]llmfleet.Completion, len(answers))
	entries := make([]llmfleet.LedgerEntry, len(answers))
	for i, a := range answers {
		rescue := llmfleet.RescueNone
		if a.rescue {
			rescue = llmfleet.RescueSync
		}
		entries[i] = d.entry(a.w, a.resp, a.err, now, rescue)
		done[i] = llmfleet.Completion{RequestID: a.w.id, Result: storedResult(a.resp, a.err, now), Ledger: &entries[i]}
	}
	if len(done) > 0 {
		if err := d.journal.complete(d.ctx, done); err != nil {
			d.log.Error("results not stored; will retry", "batch_id", batchID, "requests", len(answers), "err", err)
			d.mu.Lock()
			for _, a := range answers {
				a.w.delivering = false
			}
			d.mu.Unlock()
			return false
		}
	}
	var notKept map[*waiter]bool
	if d.shared != nil {
		// Another replica may have stored an answer first: a rescue's
		// sync call, or the batch's. This one was paid, not kept.
		for _, a := range d.answeredElsewhere(answers, now) {
			late = append(late, a)
			if notKept == nil {
				notKept = map[*waiter]bool{}
			}
			notKept[a.w] = true
		}
	}
	// Recorded once the others are stored, so that a delivery tried again
	// does not record them twice.
	d.recordLate(late)
	d.mu.Lock()
	defer d.mu.Unlock()
	if then != nil {
		then()
	}
	for i, a := range answers {
		a.w.delivering = false
		e := &entries[i]
		if notKept[a.w] {
			e = nil // its entry is the late one
		}
		d.finishLocked(a.w, a.resp, a.err, e)
	}
	return true
}

// entry returns the priced ledger entry of a batched request answered now,
// by resp's route (the batch, or a rescue's sync call), playing part
// rescue in a rescue.
func (d *Dispatcher) entry(w *waiter, resp *llmfleet.Response, err error, now time.Time, rescue llmfleet.Rescue) llmfleet.LedgerEntry {
	e := llmfleet.LedgerEntry{
		Rescue:    rescue,
		RequestID: w.id,
		Time:      now,
		Provider:  w.prov.Name(),
		Model:     w.info.Model,
		Route:     llmfleet.RouteBatch,
		Outcome:   llmfleet.Outcome(err),
		Latency:   now.Sub(w.arrived),
		Budget:    w.budget,
		Client:    w.req.Client,
	}
	var be *llmfleet.BatchError
	if errors.As(err, &be) {
		e.BatchID = be.BatchID
	}
	if resp != nil {
		if resp.Route != "" {
			e.Route = resp.Route
		}
		e.BatchID = resp.BatchID
		e.Usage = resp.Usage
		if resp.Model != "" {
			e.Model = resp.Model
		}
		e.Queued = resp.Queued
		e.Turnaround = resp.BatchTurnaround
		e.Tier = resp.Tier
	} else if !w.submitted.IsZero() {
		e.Queued = w.submitted.Sub(w.arrived)
	}
	e.BudgetMet = llmfleet.BudgetMet(err == nil, e.Latency, w.budget)
	return d.price(e)
}

// price fills in the costs of e with Price, if set.
func (d *Dispatcher) price(e llmfleet.LedgerEntry) llmfleet.LedgerEntry {
	if d.Price == nil {
		return ledger.Make(nil, e)
	}
	return d.Price(e)
}

// storedResult is the typed answer to keep for a request.
func storedResult(resp *llmfleet.Response, err error, now time.Time) *llmfleet.StoredResult {
	if err == nil {
		return &llmfleet.StoredResult{StatusCode: http.StatusOK, Body: resp.Body, Usage: resp.Usage, CompletedAt: now}
	}
	re := llmfleet.ResultErrorOf(err)
	if re.RequestID == "" {
		// The id its answer carries whenever it is read.
		re.RequestID = llmfleet.NewID("req_")
	}
	status := re.StatusCode
	if status == 0 {
		status = statusOf(re.Kind)
	}
	return &llmfleet.StoredResult{StatusCode: status, Err: re, CompletedAt: now}
}

// statusOf is the HTTP status an answer of one of llmfleet's own error
// kinds carries (the faces render the body).
func statusOf(k llmfleet.ErrorKind) int {
	switch k {
	case llmfleet.KindBudget:
		return http.StatusGatewayTimeout
	case llmfleet.KindExpired, llmfleet.KindClosed:
		return 529
	case llmfleet.KindCanceled, llmfleet.KindMissing:
		return http.StatusInternalServerError
	}
	return http.StatusBadGateway
}

// finishLocked answers a waiter once. e is its ledger entry, already
// stored if the journal is durable; nil for an answer that concludes
// nothing (the dispatcher closing).
func (d *Dispatcher) finishLocked(w *waiter, resp *llmfleet.Response, err error, e *llmfleet.LedgerEntry) {
	if !w.to(stateDone) {
		return
	}
	d.stopRescueLocked(w)
	if e != nil && d.Observe != nil {
		d.Observe(*e, d.journal.durable())
	}
	d.releaseLocked(w, resp, err)
	switch {
	case w.detached:
		if err != nil {
			d.stats.errors.Add(1)
		}
	case w.abandoned:
		d.stats.droppedResults.Add(1)
	default:
		if err != nil {
			d.stats.errors.Add(1)
		}
		d.replyLocked(w, resp, err)
	}
}

// replyLocked answers w's caller once: with the answer, or with the
// cause it stopped waiting for (its budget ran out, its context ended).
func (d *Dispatcher) replyLocked(w *waiter, resp *llmfleet.Response, err error) {
	if w.replied || w.reply == nil {
		return
	}
	w.replied = true
	if w.budgetTimer != nil {
		w.budgetTimer.Stop()
		w.budgetTimer = nil
	}
	if w.stopCtx != nil {
		w.stopCtx()
		w.stopCtx = nil
	}
	w.reply(resp, err)
}
