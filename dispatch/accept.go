package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// acceptor takes requests in for batching: it reads what the engine
// needs of them (newWaiter), makes them durable within their budget,
// then pools them (or sends them sync at once, recording their answer),
// and answers a caller that stops waiting (its budget, its context).
// Its state is the waiters' (guarded by the dispatcher's lock).
type acceptor struct{ d *Dispatcher }

// accept makes w durable, then pools it; its pool window starts once it
// is durable, so that requests that waited on the store together still
// share a batch. A request whose budget cannot hold a batch with its
// rescue (Policy.Batchable) is never pooled: it is sent sync at once,
// stored (with a durable journal) as submitted without a batch.
//
// The store's write is bounded by the budget (see bound): a caller
// that waits for the answer and whose request the store has not taken
// by its rescue time is answered sync (sent at once; the write is
// canceled, and should it land all the same, the request is completed
// with that answer, never batched). A ticket, or a retry whose id may be
// stored already, must be stored before anything is sent: one the store
// has not taken by its deadline fails with llmfleet.ErrStore.
func (ac *acceptor) accept(ctx context.Context, w *waiter) error {
	d := ac.d
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
		return ac.admitLocked(w)
	}
	d.mu.Lock()
	reserved := d.ids.reserveLocked(w)
	d.mu.Unlock()
	if !reserved {
		return errIDTaken
	}
	cancel := ac.startAdd(ctx, w)
	bound, waits := ac.bound(w, now)
	if !ac.awaitAdd(w, bound) {
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
			ac.sendNowLocked(w)
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
	return ac.admitLocked(w)
}

// startAdd starts the store's write of w in a goroutine of the
// dispatcher's, under a context derived from ctx, and returns the
// function that cancels it. w.added is closed when the write is over.
func (ac *acceptor) startAdd(ctx context.Context, w *waiter) context.CancelFunc {
	d := ac.d
	actx, cancel := context.WithCancel(ctx)
	w.added = make(chan struct{})
	d.work.run(func() {
		w.addErr = d.journal.accept(actx, w)
		close(w.added)
	})
	return cancel
}

// bound returns until when accept waits for the store's write of
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
func (ac *acceptor) bound(w *waiter, now time.Time) (time.Time, bool) {
	d := ac.d
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
func (ac *acceptor) awaitAdd(w *waiter, bound time.Time) bool {
	d := ac.d
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
func (ac *acceptor) admitLocked(w *waiter) error {
	d := ac.d
	now := d.clock.Now()
	if w.direct || !d.pol.Batchable(now, w.deadline, d.syncLat.predict(w.prov.Name(), w.info.Model)) {
		ac.sendNowLocked(w)
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
func (ac *acceptor) sendNowLocked(w *waiter) {
	d := ac.d
	w.must(stateSync, d.log)
	w.sentSync = true
	d.work.begin()
	d.work.run(func() {
		defer d.work.end()
		a := d.calls.batched(w)
		ac.settleSync(a)
	})
}

// settleSync records the answer of a request sent sync at once, and
// answers its caller: stored as its result (with its ledger entry) once
// the store's write of the request is over and stored it; its ledger
// entry alone if the write failed. While that waits, or the store fails,
// the caller is answered from the answer in hand, and the recording is
// tried again until it is done.
func (ac *acceptor) settleSync(a answer) {
	d := ac.d
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
		return ac.recordUnstored(a)
	})
}

// recordUnstored records the ledger entry of a request sent sync whose
// write the store never made, and finishes its waiter; false if the
// entry could not be recorded.
func (ac *acceptor) recordUnstored(a answer) bool {
	d := ac.d
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

// newWaiter reads what the engine needs of req: its provider, model, pool
// key and batch params. arrived is when it reached the dispatcher.
func (ac *acceptor) newWaiter(req *llmfleet.Request, budget time.Duration, arrived time.Time) (*waiter, error) {
	d := ac.d
	p, err := d.provider(req)
	if err != nil {
		return nil, err
	}
	info, err := p.Inspect(req)
	if err != nil {
		return nil, err
	}
	params, err := p.BatchParams(req)
	if err != nil {
		return nil, err
	}
	id := req.ID
	if id == "" {
		id = llmfleet.NewID("lfr_")
	}
	w := &waiter{id: id, req: req, prov: p, info: info, params: params, plain: params, budget: budget,
		arrived: arrived, retry: req.Retry, cacheBlind: d.pol.CacheBlind}
	if budget > 0 {
		w.deadline = arrived.Add(budget)
	}
	ac.priceWaiter(w)
	return w, nil
}

// priceWaiter asks the cost model about a batched request: what it
// knows of its cache (for learning from its answer and pricing what the
// sync route would have paid) and whether its cache TTLs are raised to
// an hour for its batch (then w.params carries them; w.plain, which a
// sync call of it sends, does not).
func (ac *acceptor) priceWaiter(w *waiter) {
	d := ac.d
	w.cost = d.router.cacheRequest(w.prov, w.req, w.info, w.budget)
	if w.cost == nil || !w.cost.ttl1h {
		return
	}
	up, ok := w.prov.(llmfleet.TTLUpgrader)
	if !ok {
		return
	}
	if params, n, err := up.UpgradeTTL(w.params); err == nil && n > 0 {
		w.params, w.rewrite = params, llmfleet.RewriteTTL1h
	}
}

// submitBatch pools req and arranges for reply to be called once (see
// SubmitFunc).
func (ac *acceptor) submitBatch(ctx context.Context, budget time.Duration, req *llmfleet.Request, reply func(*llmfleet.Response, error)) error {
	d := ac.d
	// A request whose id was accepted already (live here, or stored) is
	// found by accept (errIDTaken) rather than looked up first: ids are
	// almost always new.
	w, err := ac.newWaiter(req, budget, d.clock.Now())
	if err == nil {
		w.reply = reply
		w.span = d.traces.request(ctx, w)
		err = ac.accept(ctx, w)
	}
	if errors.Is(err, errIDTaken) {
		// Another call accepted the same id meanwhile: attach to it.
		var attached bool
		if attached, err = d.ids.attach(ctx, budget, req, reply); attached && err == nil {
			endRefused(w.span, nil, true)
			return nil
		} else if !attached {
			err = fmt.Errorf("%w: %s", llmfleet.ErrIDConflict, req.ID)
		}
	}
	if err != nil {
		if w != nil {
			endRefused(w.span, err, false)
		}
		d.stats.errors.Add(1)
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if w.replied {
		return nil
	}
	if budget > 0 {
		w.budgetTimer = d.clock.AfterFunc(max(w.deadline.Sub(d.clock.Now()), 0), func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			if w.replied || d.answers.replyHeldLocked(w) {
				return
			}
			d.stats.budgetMisses.Add(1)
			d.stats.errors.Add(1)
			// Made here, not at submission: a parked request holds no error.
			ac.leaveLocked(w, fmt.Errorf("%w (budget %s)", llmfleet.ErrBudgetExceeded, budget))
		})
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			ac.leaveLocked(w, ctx.Err())
		})
		w.stopCtx = stop
	}
	return nil
}

// leaveLocked handles a caller that stopped waiting for cause, unless it
// was answered already. Without a durable journal a queued request is
// withdrawn from its pool (its ledger entry records why); otherwise, and
// after submission, the request goes on and its answer is kept (or
// dropped, without a Store). The caller is answered with cause.
func (ac *acceptor) leaveLocked(w *waiter, cause error) {
	d := ac.d
	if w.replied {
		return
	}
	if w.state == stateQueued && !d.journal.durable() {
		d.pools.withdrawLocked(w)
		w.must(stateDone, d.log)
		d.rescues.stopLocked(w)
		if d.Observe != nil {
			e := d.answers.entryOf(w, nil, cause, d.clock.Now(), llmfleet.RescueNone)
			d.mu.later(func() { d.Observe(d.answers.price(e), false) })
		}
	} else {
		w.abandoned = true
	}
	d.answers.replyLocked(w, nil, cause)
}
