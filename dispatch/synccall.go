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
	s.observe(callRecord{p: p, req: req, route: llmfleet.RouteSync, start: start, budget: budget}, resp, err)
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

// callRecord is what the ledger entry of a synchronous call (the sync
// route's, or the flex route's) is made from, besides its answer.
type callRecord struct {
	p      llmfleet.Provider
	req    *llmfleet.Request
	route  llmfleet.Route
	start  time.Time
	budget time.Duration
	// asked is the tier the last attempt asked for ("": the route's): a
	// call cut, or answered without its tier, is priced in it.
	asked llmfleet.Tier
	// view is what the cost model knew of a flex call's request when it
	// was sent (nil: nothing), which prices what the sync route would
	// have paid for it.
	view *costView
	// rescued says a flex attempt of the call was given up for a
	// standard one (its own entry: givenUp).
	rescued bool
}

// viewOf returns what the cost model knows of a flex call's request
// (info, as p inspected it) now, as it is sent: nil for a request without
// cached prompt.
func (s *syncCaller) viewOf(p llmfleet.Provider, req *llmfleet.Request, info llmfleet.RequestInfo, budget time.Duration) *costView {
	d := s.d
	if d.pol.CacheBlind || !info.Prompt.Cached() {
		return nil
	}
	if v, ok := d.router.costView(p, req, info, budget, feasible{}, false); ok {
		return &v
	}
	return nil
}

// observe hands the ledger entry of a synchronous call (the sync
// route's, or the flex route's) to Observe, if set.
// It teaches the cost model the call's answer, and prices what the sync
// route would have paid for a flex call with the sync cache's state when
// it was sent. A call cut after it was sent, or whose connection failed
// once its request was written (mayBeBilled), gets its usage estimated
// from its body (LedgerEntry.Estimated): the provider may bill it.
func (s *syncCaller) observe(c callRecord, resp *llmfleet.Response, err error) {
	d := s.d
	info, _ := c.p.Inspect(c.req)
	e := llmfleet.LedgerEntry{Time: d.clock.Now(), Provider: c.p.Name(), Model: info.Model,
		Route: c.route, Outcome: llmfleet.Outcome(err), Client: c.req.Client, Budget: c.budget}
	e.Latency = e.Time.Sub(c.start)
	e.BudgetMet = llmfleet.BudgetMet(err == nil, e.Latency, c.budget)
	if resp != nil {
		e.Usage, e.Tier = resp.Usage, resp.Tier
		if resp.Model != "" {
			e.Model = resp.Model
		}
		if c.route == llmfleet.RouteFlex {
			e.SyncUSD = syncBill(c.view, resp.Usage)
		}
		e.MissUSD = d.cache.learn(c.p.Name(), info.Model, d.fingerprint(c.req.Credential), info.Prompt, c.route, false, e.Time, nil, resp.Usage)
		if resp.Pending {
			e.Usage, e.Estimated = llmfleet.EstimatedUsage(int64(len(c.req.Body))), true
		}
	} else if mayBeBilled(err) {
		e.Usage, e.Estimated = llmfleet.EstimatedUsage(int64(len(c.req.Body))), true
	}
	if e.Tier == "" && (resp != nil || e.Estimated) {
		e.Tier = c.asked
	}
	if c.rescued {
		e.Rescue = llmfleet.RescueSync
	}
	if d.Observe != nil {
		d.Observe(d.answers.price(e), false)
	}
}

// givenUp hands Observe the entry of a flex attempt of c given up for a
// standard call once sent: the provider may bill it, its usage estimated
// from its body; its request is judged by the answer it gets.
func (s *syncCaller) givenUp(c callRecord) {
	d := s.d
	info, _ := c.p.Inspect(c.req)
	now := d.clock.Now()
	e := llmfleet.LedgerEntry{Time: now, Provider: c.p.Name(), Model: info.Model,
		Route: llmfleet.RouteFlex, Tier: llmfleet.TierFlex, Outcome: "timeout_error", Latency: now.Sub(c.start),
		Client: c.req.Client, Budget: c.budget}.PaidUndelivered(len(c.req.Body))
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
