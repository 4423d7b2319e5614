package dispatch

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Plan returns the route Submit would choose for req now, by
// Policy.Route: its budget (Policy.DefaultBudget when 0) against its
// model's predicted batch turnaround.
func (d *Dispatcher) Plan(budget time.Duration, req *llmfleet.Request) llmfleet.Route {
	budget = d.pol.Budget(budget)
	if budget <= d.pol.SyncMaxLatency {
		return llmfleet.RouteSync // decided without reading the body
	}
	p, err := d.provider(req)
	if err != nil {
		return llmfleet.RouteSync
	}
	info, err := p.Inspect(req)
	if err != nil {
		return llmfleet.RouteSync
	}
	return d.route(p.Name(), info.Model, budget)
}

// route decides by Policy.Route, exploring a model without observed
// turnarounds once at a time.
func (d *Dispatcher) route(provider, model string, budget time.Duration) llmfleet.Route {
	reserve := d.pol.Reserve(d.syncLat.predict(provider, model))
	r := d.pol.Route(budget, d.predictor.predict(provider, model), reserve, false)
	if r == llmfleet.RouteSync && d.pol.Route(budget, math.MaxInt64, reserve, true) == llmfleet.RouteBatch && d.predictor.explore(provider, model) {
		d.log.Info("exploring a model's batch turnaround", "provider", provider, "model", model)
		r = llmfleet.RouteBatch
	}
	return r
}

// Submit routes req by its latency budget (0: Policy.DefaultBudget) and
// waits for its answer. The budget counts from now on either route: a sync
// call still unanswered when it runs out is given up with
// llmfleet.ErrBudgetExceeded.
func (d *Dispatcher) Submit(ctx context.Context, budget time.Duration, req *llmfleet.Request) (*llmfleet.Response, error) {
	budget = d.pol.Budget(budget)
	if d.Plan(budget, req) == llmfleet.RouteBatch {
		return d.SubmitBatch(ctx, budget, req)
	}
	if budget <= 0 {
		return d.SubmitSync(ctx, req)
	}
	sctx, cancel := d.withTimeout(ctx, budget)
	defer cancel()
	resp, err := d.SubmitSync(sctx, req)
	if err != nil && ctx.Err() == nil && context.Cause(sctx) == errTimedOut {
		d.stats.budgetMisses.Add(1)
		return nil, fmt.Errorf("%w (budget %s, sync): %w", llmfleet.ErrBudgetExceeded, budget, err)
	}
	return resp, err
}

// SubmitSync sends req to the provider's synchronous endpoint.
func (d *Dispatcher) SubmitSync(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
	p, err := d.provider(req)
	if err != nil {
		d.stats.errors.Add(1)
		return nil, err
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, llmfleet.ErrClosed
	}
	d.stats.syncCalls.Add(1)
	start := d.clock.Now()
	resp, err := p.Send(ctx, req)
	if err == nil {
		d.syncLat.observe(p.Name(), resp.Model, d.clock.Now().Sub(start))
	}
	if d.Observe != nil {
		info, _ := p.Inspect(req)
		e := llmfleet.LedgerEntry{Time: d.clock.Now(), Provider: p.Name(), Model: info.Model,
			Route: llmfleet.RouteSync, Outcome: llmfleet.Outcome(err)}
		e.Latency = e.Time.Sub(start)
		e.BudgetMet = llmfleet.BudgetMet(err == nil, e.Latency, 0)
		if resp != nil {
			e.Usage = resp.Usage
			if resp.Model != "" {
				e.Model = resp.Model
			}
		}
		d.Observe(d.price(e), false)
	}
	if err != nil {
		d.stats.errors.Add(1)
		return nil, err
	}
	resp.Route = llmfleet.RouteSync
	return resp, nil
}

// newWaiter reads what the engine needs of req: its provider, model, pool
// key and batch params. arrived is when it reached the dispatcher.
func (d *Dispatcher) newWaiter(req *llmfleet.Request, budget time.Duration, arrived time.Time) (*waiter, error) {
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
	w := &waiter{id: id, req: req, prov: p, info: info, params: params, budget: budget,
		arrived: arrived, done: make(chan outcome, 1)}
	if budget > 0 {
		w.deadline = arrived.Add(budget)
	}
	return w, nil
}

// accept makes w durable, then pools it. Its pool window starts now,
// after the durable write, so that requests that waited on the store
// together still share a batch.
func (d *Dispatcher) accept(ctx context.Context, w *waiter) error {
	if err := d.checkSize(w); err != nil {
		return err
	}
	d.mu.Lock()
	closed, opened := d.closed, d.opened
	d.mu.Unlock()
	if !opened {
		return fmt.Errorf("dispatch: Submit before Open")
	}
	if closed {
		return llmfleet.ErrClosed
	}
	if err := d.journal.accept(ctx, w); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	w.accepted = d.clock.Now()
	if err := d.enqueueLocked(w); err != nil {
		return err
	}
	d.armRescueLocked(w)
	d.stats.batchedCalls.Add(1)
	return nil
}

// SubmitBatch pools req into a batch whatever its budget and waits for its
// answer. A positive budget, counted from now, bounds the wait and may
// pull the pool's flush forward; 0 means no budget.
func (d *Dispatcher) SubmitBatch(ctx context.Context, budget time.Duration, req *llmfleet.Request) (*llmfleet.Response, error) {
	arrived := d.clock.Now()
	var expired <-chan struct{}
	if budget > 0 {
		ch := make(chan struct{})
		t := d.clock.AfterFunc(budget, func() { close(ch) })
		defer t.Stop()
		expired = ch
	}
	w, err := d.newWaiter(req, budget, arrived)
	if err == nil {
		err = d.accept(ctx, w)
	}
	if err != nil {
		d.stats.errors.Add(1)
		return nil, err
	}
	select {
	case o := <-w.done:
		if o.err != nil {
			d.stats.errors.Add(1)
		}
		return o.resp, o.err
	case <-ctx.Done():
		if o, ok := d.leave(w, ctx.Err()); ok {
			return o.resp, o.err
		}
		return nil, ctx.Err()
	case <-expired:
		missed := fmt.Errorf("%w (budget %s)", llmfleet.ErrBudgetExceeded, budget)
		if o, ok := d.leave(w, missed); ok {
			return o.resp, o.err
		}
		d.stats.budgetMisses.Add(1)
		d.stats.errors.Add(1)
		return nil, missed
	}
}

// leave handles a caller that stopped waiting. Without a durable journal a
// queued request is withdrawn from its pool (its ledger entry records
// why); otherwise, and after submission, the request goes on and its
// answer is kept (or dropped, without a Store). If the answer had already
// arrived it returns it.
func (d *Dispatcher) leave(w *waiter, cause error) (outcome, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	select {
	case o := <-w.done:
		return o, true
	default:
	}
	if w.state == stateQueued && !d.journal.durable() {
		d.withdrawLocked(w)
		w.to(stateDone)
		if d.Observe != nil {
			d.Observe(d.entry(w, nil, cause, d.clock.Now()), false)
		}
		return outcome{}, false
	}
	w.abandoned = true
	return outcome{}, false
}

// Enqueue accepts a request for batching without waiting for its answer
// and returns llmfleet's id of it; the answer is stored and read with
// Lookup. It needs a Store. A budget of 0 means none.
func (d *Dispatcher) Enqueue(ctx context.Context, budget time.Duration, req *llmfleet.Request) (string, error) {
	if d.Store == nil {
		return "", fmt.Errorf("dispatch: Enqueue needs a Store: %w", llmfleet.ErrNoStore)
	}
	w, err := d.newWaiter(req, budget, d.clock.Now())
	if err != nil {
		return "", err
	}
	w.detached = true
	if err := d.accept(ctx, w); err != nil {
		return "", err
	}
	return w.id, nil
}

// Lookup returns a stored request and, once answered, its result. Only the
// credential that submitted a request may read it: for any other it
// returns llmfleet.ErrNotFound.
func (d *Dispatcher) Lookup(ctx context.Context, id string, cred llmfleet.Credential) (*llmfleet.StoredRequest, error) {
	if d.Store == nil {
		return nil, llmfleet.ErrNotFound
	}
	r, err := d.Store.GetRequest(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.CredentialID != d.fingerprint(cred) {
		return nil, llmfleet.ErrNotFound
	}
	return r, nil
}
