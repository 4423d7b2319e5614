package dispatch

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/ledger"
)

// answerer stores answers and answers their callers: a result is stored
// with its ledger entry, in one transaction, before its caller gets it;
// an answer in hand that the store cannot take yet is held and its
// storing retried; callers and Observe are answered once the
// dispatcher's lock is released. Its state is the waiters' (guarded by
// the dispatcher's lock).
type answerer struct{ d *Dispatcher }

// answer is what one waiter is to be answered with.
type answer struct {
	w      *waiter
	resp   *llmfleet.Response
	err    error
	rescue bool // the answer of a rescue's sync call
}

// sameBatchResult reports whether resp is the result res was stored
// from: one batch's result, delivered twice (by the replica that created
// the batch and by one that adopted it), paid once.
func sameBatchResult(resp *llmfleet.Response, res *llmfleet.StoredResult) bool {
	return resp.Route == llmfleet.RouteBatch && resp.BatchID != "" && res.BatchID == resp.BatchID
}

// storedResult is the typed answer to keep for a request.
func storedResult(resp *llmfleet.Response, err error, now time.Time) *llmfleet.StoredResult {
	if err == nil {
		res := &llmfleet.StoredResult{StatusCode: http.StatusOK, Body: resp.Body, Usage: resp.Usage, CompletedAt: now}
		if resp.Route == llmfleet.RouteBatch {
			res.BatchID = resp.BatchID
		}
		return res
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
	res := &llmfleet.StoredResult{StatusCode: status, Err: re, CompletedAt: now}
	var be *llmfleet.BatchError
	if errors.As(err, &be) {
		res.BatchID = be.BatchID
	}
	return res
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

// deliver stores the answers with their ledger entries in one
// transaction, then, under the lock, calls then (if not nil), answers
// their callers and observes the entries. An answer to a request that was
// answered first (by a rescue here, or by whatever another replica
// stored) is no second delivery: its caller gets the answer kept, and if
// it was paid for apart from that one, it is recorded in the ledger as
// late (see second). If they cannot be stored nobody is answered and it
// returns false: the caller tries again later, so that no answer is
// given that a restart would not find.
func (an *answerer) deliver(answers []answer, batchID string, then func()) bool {
	d := an.d
	var late []answer
	d.mu.Lock()
	live := answers[:0:0]
	for _, a := range answers {
		if !d.journal.durable() && a.w.state == stateDone && (a.w.rescuing || a.rescue) {
			// Without a store, the rescue's answer or the batch's came
			// first here: this one is late. (With one, the store tells.)
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
		entries[i] = an.entry(a.w, a.resp, a.err, now, rescue)
		done[i] = llmfleet.Completion{RequestID: a.w.id, Result: storedResult(a.resp, a.err, now), Ledger: &entries[i]}
	}
	kept, err := an.complete(done)
	var firsts map[*waiter]outcome
	if err == nil {
		var seconds []answer
		seconds, firsts, err = an.second(answers, kept)
		late = append(late, seconds...)
	}
	if err != nil {
		d.log.Error("results not stored; will retry", "batch_id", batchID, "requests", len(answers), "err", err)
		d.mu.Lock()
		for _, a := range answers {
			a.w.delivering = false
		}
		d.mu.Unlock()
		return false
	}
	// Recorded once the others are stored, so that a delivery tried again
	// does not record them twice.
	d.paid.late(late)
	d.mu.Lock()
	defer d.mu.Unlock()
	if then != nil {
		then()
	}
	for i, a := range answers {
		a.w.delivering = false
		if o, ok := firsts[a.w]; ok {
			// Its entry is the first answer's (or the late one).
			an.finishLocked(a.w, o.resp, o.err, nil)
			continue
		}
		an.finishLocked(a.w, a.resp, a.err, &entries[i])
	}
	return true
}

// complete stores completions, reporting which completed their request.
func (an *answerer) complete(done []llmfleet.Completion) ([]bool, error) {
	d := an.d
	if len(done) == 0 {
		return nil, nil
	}
	kept, err := d.journal.complete(d.ctx, done)
	if err == nil && len(kept) != len(done) {
		err = fmt.Errorf("dispatch: the store reported %d outcomes of %d completions", len(kept), len(done))
	}
	return kept, err
}

// second sorts out the answers whose completion was not kept: their
// requests were answered first, here or by another replica. It reads
// what was stored for them and returns the ones paid for apart from the
// stored answer (late: a rescue's sync call and a batch's result of one
// request), and, by waiter, the stored answer each caller is to get. An
// answer that is the stored one (the same batch result, delivered by this
// replica and by one that adopted the batch) was paid once: it is neither
// late nor delivered twice.
func (an *answerer) second(answers []answer, kept []bool) (late []answer, firsts map[*waiter]outcome, err error) {
	var ids []string
	var not []answer
	for i, a := range answers {
		if !kept[i] {
			not, ids = append(not, a), append(ids, a.w.id)
		}
	}
	if len(not) == 0 {
		return nil, nil, nil
	}
	srs, err := an.storedRequests(ids)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the answers stored first: %w", err)
	}
	firsts = make(map[*waiter]outcome, len(not))
	for _, a := range not {
		sr := srs[a.w.id]
		if sr == nil || sr.Result == nil {
			return nil, nil, fmt.Errorf("request %s: not completed, yet its completion was not kept", a.w.id)
		}
		resp, rerr := storedAnswer(sr)
		firsts[a.w] = outcome{resp, rerr}
		if a.resp != nil && !sameBatchResult(a.resp, sr.Result) {
			late = append(late, a) // paid, and not the answer kept
		}
	}
	return late, firsts, nil
}

// learn teaches the cost model the answer resp of w, once per
// cache however often its delivery is tried, and returns the cost of the
// cache writes its route caused.
func (an *answerer) learn(w *waiter, resp *llmfleet.Response, now time.Time) float64 {
	d := an.d
	route := resp.Route
	if route == "" {
		route = llmfleet.RouteBatch
	}
	i := 0
	at, believed, ttl1h := now, (*costView)(nil), false
	if route == llmfleet.RouteBatch {
		// Its item ran within its batch's turnaround; the cost model's
		// view of it is the one it was batched by.
		i, at, believed, ttl1h = 1, now.Add(-resp.BatchTurnaround/2), w.cost, w.rewrite != ""
	}
	w.learnt.mu.Lock()
	defer w.learnt.mu.Unlock()
	if !w.learnt.done[i] {
		w.learnt.done[i] = true
		w.learnt.miss[i] = d.cache.learn(w.prov.Name(), w.info.Model, d.fingerprint(w.req.Credential), w.info.Prompt,
			route, ttl1h, at, believed, resp.Usage)
	}
	return w.learnt.miss[i]
}

// storedRequests reads the stored requests of ids, by id: in one read
// from a SharedStore, one by one from another store.
func (an *answerer) storedRequests(ids []string) (map[string]*llmfleet.StoredRequest, error) {
	d := an.d
	out := make(map[string]*llmfleet.StoredRequest, len(ids))
	if d.shared != nil {
		srs, err := d.shared.GetRequests(d.ctx, ids)
		if err != nil {
			return nil, err
		}
		for _, sr := range srs {
			out[sr.ID] = sr
		}
		return out, nil
	}
	for _, id := range ids {
		sr, err := d.Store.GetRequest(d.ctx, id)
		if err != nil {
			return nil, err
		}
		out[id] = sr
	}
	return out, nil
}

// entry returns the priced ledger entry of a batched request answered now,
// by resp's route (the batch, or a rescue's sync call), playing part
// rescue in a rescue.
func (an *answerer) entry(w *waiter, resp *llmfleet.Response, err error, now time.Time, rescue llmfleet.Rescue) llmfleet.LedgerEntry {
	return an.price(an.entryOf(w, resp, err, now, rescue))
}

// entryOf is entry, not priced yet.
func (an *answerer) entryOf(w *waiter, resp *llmfleet.Response, err error, now time.Time, rescue llmfleet.Rescue) llmfleet.LedgerEntry {
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
	if !w.heldAt.IsZero() && w.heldAt.Before(now) {
		// Answered from the answer in hand before it was recorded: its
		// latency is its caller's.
		e.Latency = w.heldAt.Sub(w.arrived)
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
		e.MissUSD = an.learn(w, resp, now)
		if e.Route == llmfleet.RouteBatch {
			e.Rewrite = w.rewrite
			e.SyncUSD = syncBill(w.cost, resp.Usage)

		}
	} else if w.sentSync {
		e.Route = llmfleet.RouteSync
	} else if !w.submitted.IsZero() {
		e.Queued = w.submitted.Sub(w.arrived)
	}
	e.BudgetMet = llmfleet.BudgetMet(err == nil, e.Latency, w.budget)
	return e
}

// price fills in the costs of e with Price, if set.
func (an *answerer) price(e llmfleet.LedgerEntry) llmfleet.LedgerEntry {
	d := an.d
	if d.Price == nil {
		return ledger.Make(nil, e)
	}
	return d.Price(e)
}

// finishLocked answers a waiter once. e is its ledger entry, already
// stored if the journal is durable; nil for an answer that concludes
// nothing (the dispatcher closing).
func (an *answerer) finishLocked(w *waiter, resp *llmfleet.Response, err error, e *llmfleet.LedgerEntry) {
	d := an.d
	if w.state == stateDone {
		return // answered once
	}
	w.must(stateDone, d.log)
	d.rescues.stopLocked(w)
	d.traces.finishLocked(&d.mu, w, err, e)
	if e != nil && d.Observe != nil {
		entry, durable := *e, d.journal.durable()
		d.mu.later(func() { d.Observe(entry, durable) })
	}
	d.ids.releaseLocked(w, resp, err)
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
		an.replyLocked(w, resp, err)
	}
}

// replyLocked answers w's caller once: with the answer, or with the
// cause it stopped waiting for (its budget ran out, its context ended).
func (an *answerer) replyLocked(w *waiter, resp *llmfleet.Response, err error) {
	d := an.d
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
	reply := w.reply
	d.mu.later(func() { reply(resp, err) })
}
