package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Submit routes req by its latency budget (0: Policy.DefaultBudget) and
// waits for its answer. The budget counts from now on every route. On the
// sync and flex routes it routes and does not cut: a call still
// unanswered when it runs out goes on and is answered late (its ledger
// entry's BudgetMet false, counted in Stats.BudgetMisses), unless
// Policy.HardDeadline makes the budget a deadline, when the call is cut
// then with llmfleet.ErrBudgetExceeded. Policy.UpstreamTimeout bounds
// every call (llmfleet.ErrUpstreamTimeout). A batched request's caller is
// answered at its deadline (see SubmitBatch).
func (d *Dispatcher) Submit(ctx context.Context, budget time.Duration, req *llmfleet.Request) (*llmfleet.Response, error) {
	budget = d.pol.Budget(budget)
	switch d.Plan(budget, req) {
	case llmfleet.RouteBatch:
		return d.SubmitBatch(ctx, budget, req)
	case llmfleet.RouteFlex:
		return d.SubmitFlex(ctx, budget, req)
	}
	return d.calls.send(ctx, budget, req)
}

// SubmitSync sends req to the provider's synchronous endpoint, with no
// budget; Policy.UpstreamTimeout bounds the call.
func (d *Dispatcher) SubmitSync(ctx context.Context, req *llmfleet.Request) (*llmfleet.Response, error) {
	return d.calls.send(ctx, 0, req)
}

// SubmitBatch pools req into a batch whatever its budget and waits for its
// answer. A positive budget, counted from now, bounds the wait and may
// pull the pool's flush forward; 0 means no budget.
func (d *Dispatcher) SubmitBatch(ctx context.Context, budget time.Duration, req *llmfleet.Request) (*llmfleet.Response, error) {
	ch := make(chan outcome, 1)
	if err := d.accepts.submitBatch(ctx, budget, req, func(resp *llmfleet.Response, err error) { ch <- outcome{resp, err} }); err != nil {
		return nil, err
	}
	o := <-ch
	return o.resp, o.err
}

// SubmitBatchFunc is SubmitBatch without the wait (llmfleet.FuncSubmitter):
// req is pooled whatever its budget and done is called exactly once, as
// SubmitFunc's is. An error returned means done will not be called.
func (d *Dispatcher) SubmitBatchFunc(ctx context.Context, budget time.Duration, req *llmfleet.Request, done func(*llmfleet.Response, error)) error {
	return d.accepts.submitBatch(ctx, budget, req, done)
}

// SubmitFunc routes req like Submit without waiting for its answer: done
// is called exactly once, with the answer (late, on the sync and flex
// routes, if the budget ran out first and Policy.HardDeadline is not
// set), or with an error wrapping llmfleet.ErrBudgetExceeded when the
// budget (counted from now) runs out first on the batch route or under
// a hard deadline, or with ctx's error when ctx ends first. A batched request that
// its caller stops waiting for behaves as under SubmitBatch: without a
// Store a queued one leaves its pool, any other goes on and its answer is
// kept with a Store (dropped without). The sync and flex routes run
// their call in a goroutine of the Dispatcher's (see Go). An error returned means done
// will not be called. done is never called with the Dispatcher's lock
// held: it may call back into the Dispatcher.
func (d *Dispatcher) SubmitFunc(ctx context.Context, budget time.Duration, req *llmfleet.Request, done func(*llmfleet.Response, error)) error {
	route := d.Plan(budget, req)
	if route == llmfleet.RouteBatch {
		return d.accepts.submitBatch(ctx, d.pol.Budget(budget), req, done)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case !d.opened:
		return fmt.Errorf("dispatch: Submit before Open")
	case d.closed:
		return llmfleet.ErrClosed
	}
	if route == llmfleet.RouteFlex {
		d.work.run(func() { done(d.SubmitFlex(ctx, budget, req)) })
		return nil
	}
	d.work.run(func() { done(d.calls.send(ctx, d.pol.Budget(budget), req)) })
	return nil
}

// Enqueue accepts a request for batching without waiting for its answer
// and returns llmfleet's id of it; the answer is stored and read with
// Lookup. It needs a Store. A budget of 0 means none.
func (d *Dispatcher) Enqueue(ctx context.Context, budget time.Duration, req *llmfleet.Request) (string, error) {
	if d.Store == nil {
		return "", fmt.Errorf("dispatch: Enqueue needs a Store: %w", llmfleet.ErrNoStore)
	}
	// A request of this id accepted already is not accepted again: accept
	// finds it (errIDTaken).
	w, err := d.accepts.newWaiter(req, budget, d.clock.Now())
	if err != nil {
		return "", err
	}
	w.detached = true
	w.span = d.traces.request(ctx, w)
	if err := d.accepts.accept(ctx, w); err != nil {
		endRefused(w.span, err, errors.Is(err, errIDTaken))
		if errors.Is(err, errIDTaken) {
			if _, err := d.ids.known(ctx, req); err != nil {
				return "", err
			}
			return req.ID, nil
		}
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
