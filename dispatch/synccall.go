package dispatch

import (
	"context"
	"errors"
	"time"

	"github.com/llmfleet/llmfleet"
)

// syncCaller makes the calls the dispatcher sends synchronously: the sync
// route's, and the sync call of a batched request (its rescue, or its
// sending at once); it bounds them, and the flex route's (deadline.go),
// learns their latencies and hands the sync and flex routes' ledger
// entries to Observe, never holding the dispatcher's lock.
type syncCaller struct{ d *Dispatcher }

// send sends req to the provider's synchronous endpoint with budget
// (0: none), as Submit's sync route does.
func (s *syncCaller) send(ctx context.Context, budget time.Duration, req *llmfleet.Request) (*llmfleet.Response, error) {
	d := s.d
	p, err := s.provider(req)
	if err != nil {
		return nil, err
	}
	d.stats.syncCalls.Add(1)
	start := d.clock.Now()
	span := d.traces.call(ctx, p, req, llmfleet.RouteSync, budget)
	b := s.bound(ctx, p, llmfleet.RouteSync, budget, s.hardAfter(budget))
	resp, err := p.Send(b.ctx, req)
	err = b.end(err)
	called(span, p, llmfleet.RouteSync, resp, err, d.answers.price)
	if err == nil && !d.pol.NoLearning {
		d.syncLat.observe(p.Name(), resp.Model, d.clock.Now().Sub(start))
	}
	s.missed(start, budget, err)
	s.observe(p, req, llmfleet.RouteSync, start, budget, resp, err)
	if err != nil {
		d.stats.errors.Add(1)
		return nil, err
	}
	resp.Route = llmfleet.RouteSync
	return resp, nil
}

// provider returns the provider of a synchronous call (sync or flex):
// an unknown provider is counted as an error, and a closed dispatcher
// refuses the call.
func (s *syncCaller) provider(req *llmfleet.Request) (llmfleet.Provider, error) {
	d := s.d
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
	return p, nil
}

// observe hands the ledger entry of a synchronous call (the sync
// route's, or the flex route's) to Observe, if set.
// It teaches the cost model the call's answer, and prices what the sync
// route would have paid for a flex call with the sync cache's state. A
// call cut after it was sent (mayBeBilled) gets its usage estimated from
// its body (LedgerEntry.Estimated): the provider may bill it.
func (s *syncCaller) observe(p llmfleet.Provider, req *llmfleet.Request, route llmfleet.Route, start time.Time, budget time.Duration, resp *llmfleet.Response, err error) {
	d := s.d
	info, _ := p.Inspect(req)
	e := llmfleet.LedgerEntry{Time: d.clock.Now(), Provider: p.Name(), Model: info.Model,
		Route: route, Outcome: llmfleet.Outcome(err), Client: req.Client, Budget: budget}
	e.Latency = e.Time.Sub(start)
	e.BudgetMet = llmfleet.BudgetMet(err == nil, e.Latency, budget)
	if resp != nil {
		e.Usage, e.Tier = resp.Usage, resp.Tier
		if resp.Model != "" {
			e.Model = resp.Model
		}
		if route == llmfleet.RouteFlex && !d.pol.CacheBlind && info.Prompt.Cached() {
			if v, ok := d.router.costView(p, req, info, budget, feasible{}, false); ok {
				e.SyncUSD = syncBill(&v, resp.Usage)
			}
		}
		e.MissUSD = d.cache.learn(p.Name(), info.Model, d.fingerprint(req.Credential), info.Prompt, route, false, e.Time, nil, resp.Usage)
	} else if mayBeBilled(err) {
		e.Usage, e.Estimated = llmfleet.EstimatedUsage(int64(len(req.Body))), true
	}
	if d.Observe != nil {
		d.Observe(d.answers.price(e), false)
	}
}

// batched makes the sync call of a batched request (its rescue, or its
// sending at once), with its batch params, and returns its answer: the
// Response, route sync, or the error. Its deadline does not cut it: a
// call already sent goes on, and its answer is delivered and recorded
// (its caller, answered at the deadline, reads it by its ticket), unless
// Policy.HardDeadline makes the deadline (or RescueMargin, when that has
// passed) cut it, with llmfleet.ErrBudgetExceeded. Policy.UpstreamTimeout
// bounds it (llmfleet.ErrUpstreamTimeout).
func (s *syncCaller) batched(w *waiter) answer {
	d := s.d
	cutAfter := time.Duration(0)
	if d.pol.HardDeadline && !w.deadline.IsZero() {
		if cutAfter = w.deadline.Sub(d.clock.Now()); cutAfter <= 0 {
			cutAfter = d.pol.RescueMargin
		}
	}
	b := s.bound(d.ctx, w.prov, llmfleet.RouteSync, w.budget, cutAfter)
	req := &llmfleet.Request{Provider: w.req.Provider, Credential: w.req.Credential, Header: w.req.Header, Endpoint: w.req.Endpoint, Body: w.plain, Client: w.req.Client}
	start := d.clock.Now()
	d.stats.syncCalls.Add(1)
	resp, err := w.prov.Send(b.ctx, req)
	err = b.end(err)
	if err != nil {
		if errors.Is(err, llmfleet.ErrBudgetExceeded) {
			d.stats.budgetMisses.Add(1)
		}
		return answer{w: w, err: err}
	}
	if !d.pol.NoLearning {
		d.syncLat.observe(w.prov.Name(), resp.Model, d.clock.Now().Sub(start))
	}
	resp.Route = llmfleet.RouteSync
	resp.RequestID = w.id
	return answer{w: w, resp: resp}
}
