package dispatch

import (
	"log/slog"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachecost"
)

// router decides a request's route: by its budget (the Policy, the
// predictors, the flex tier) and, for a prompt with cache breakpoints,
// by the cost model.
type router struct {
	pol         Policy
	clock       llmfleet.Clock
	log         *slog.Logger
	predictor   *predictor                                            // batch turnarounds
	syncLat     *predictor                                            // sync call latencies
	flex        *flexTier                                             // what was learnt of flex tiers
	hasFlex     func(provider, model string) bool                     // Dispatcher.Flex
	prices      func(provider, model string) (cachecost.Prices, bool) // Dispatcher.Prices
	cache       *cacheModel
	fingerprint func(llmfleet.Credential) string
	providers   []llmfleet.Provider
	flights     *trackerSet // the ages of the batches in flight
}

// Plan returns the route Submit would choose for req now (see route).
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
	return d.router.route(p, req, info, budget)
}

// SyncMaxLatency returns the largest budget that always goes sync
// (Policy.SyncMaxLatency, its default applied once the Dispatcher is
// open): the proxy names it when it says why a call went sync.
func (d *Dispatcher) SyncMaxLatency() time.Duration { return d.pol.SyncMaxLatency }

// feasible is what a request's budget allows: the batch route (its
// model's turnaround, or an exploration of it, fits with the rescue's
// reserve), the flex route, and the route the cache-blind rules choose.
type feasible struct {
	batch, explore, flex bool
	blind                llmfleet.Route
}

// feasibleRoutes applies Policy.Route and Policy.RouteFlex to a request
// of model with budget.
func (rt *router) feasibleRoutes(provider, model string, budget time.Duration) feasible {
	var f feasible
	reserve := rt.pol.Reserve(rt.syncLat.predict(provider, model))
	predicted := rt.predictor.atCensored(provider, model, rt.pol.OnTimeQuantile(), rt.flights.ages(provider, model))
	f.blind = rt.pol.Route(budget, predicted, reserve, false)
	f.batch = f.blind == llmfleet.RouteBatch
	if !f.batch && !rt.pol.NoLearning && rt.pol.Explorable(budget, reserve, rt.predictor.at(provider, model, 0.5)) &&
		!rt.predictor.has(provider, model) {
		f.batch, f.explore = true, true
	}
	if rt.hasFlex != nil {
		fi := rt.flexInfo(provider, model)
		flexReserve := rt.syncLat.predict(provider, model) + rt.pol.RescueMargin
		f.flex = rt.pol.RouteFlex(llmfleet.RouteSync, budget, flexReserve, fi) == llmfleet.RouteFlex
		if f.flex && rt.pol.RouteFlex(f.blind, budget, flexReserve, fi) == llmfleet.RouteFlex {
			f.blind = llmfleet.RouteFlex
		}
	}
	if f.explore && f.blind == llmfleet.RouteSync {
		f.blind = llmfleet.RouteBatch
	}
	return f
}

// withoutBatch returns f with the batch route taken out: what the
// budget allows of a request that is never batched (Request.NoBatch).
func (f feasible) withoutBatch() feasible {
	f.batch, f.explore = false, false
	if f.blind == llmfleet.RouteBatch {
		f.blind = llmfleet.RouteSync
		if f.flex {
			f.blind = llmfleet.RouteFlex
		}
	}
	return f
}

// route decides a request's route: by budget, the routes it can take
// (Policy.Route, Policy.RouteFlex, exploring a model without observed
// turnarounds once at a time with a budget a batch could plausibly
// keep); then, for a prompt with cache breakpoints, unless
// Policy.CacheBlind, by the cost model: the cheapest of those routes by
// expected bill, never one expected to cost more than sync, the
// conversation kept on its cache unless the other is clearly cheaper. A
// request that is never batched (Request.NoBatch) chooses between sync
// and flex; one taken only batched (Request.BatchOnly) is batched when
// its budget allows it, whatever it costs, else goes sync.
func (rt *router) route(p llmfleet.Provider, req *llmfleet.Request, info llmfleet.RequestInfo, budget time.Duration) llmfleet.Route {
	provider, model := p.Name(), info.Model
	f := rt.feasibleRoutes(provider, model, budget)
	switch {
	case info.Unbatchable:
		f = f.withoutBatch()
	case req.BatchOnly:
		if f.batch {
			return llmfleet.RouteBatch
		}
		return llmfleet.RouteSync
	case req.NoBatch:
		f = f.withoutBatch()
	}
	r := f.blind
	if !rt.pol.CacheBlind && info.Prompt.Cached() && (f.batch || f.flex) {
		if v, ok := rt.costView(p, req, info, budget, f, true); ok {
			r = v.choice.Route
			rt.cache.book.Routed(rt.fingerprint(req.Credential), info.Prompt.Conversation, r, rt.clock.Now())
		}
	}
	if r == llmfleet.RouteBatch && f.explore {
		if !rt.predictor.explore(provider, model) {
			r = llmfleet.RouteSync // another request explores it already
		} else {
			rt.log.Info("exploring a model's batch turnaround", "provider", provider, "model", model)
		}
	}
	return r
}

// flexInfo returns what RouteFlex reads of a model's flex tier.
func (rt *router) flexInfo(provider, model string) Flex {
	has := rt.hasFlex != nil && rt.hasFlex(provider, model)
	return rt.flex.info(provider, model, has)
}

// cacheRequest is what the cost model knew of a request when it was
// routed, for learning from its answer and pricing its counterfactual.
func (rt *router) cacheRequest(p llmfleet.Provider, req *llmfleet.Request, info llmfleet.RequestInfo, budget time.Duration) *costView {
	if rt.pol.CacheBlind || !info.Prompt.Cached() {
		return nil
	}
	v, ok := rt.costView(p, req, info, budget, feasible{batch: true}, false)
	if !ok {
		return nil
	}
	return &v
}

// costView is what the cost model says of a request: the cost model's
// form of it (its breakpoints' sizes and cache state as the Book knows
// them), the estimate of each route it may take, and the one to route by.
type costView struct {
	model    cachecost.Model
	believed cachecost.Request
	at       time.Time // when it was estimated
	sync     cachecost.Estimate
	batch    *cachecost.Estimate // nil: not feasible
	choice   cachecost.Estimate
	ttl1h    bool // raise its TTLs to an hour if batched
}

// costView estimates a request's routes with the cost model; false when
// its model is not priced. f tells which routes its budget allows.
//
// With decide, it is the routing decision: the batch route may be tried
// to measure the batch cache's rate (cachecost.Explore), and the trial is
// counted; otherwise it only looks.
func (rt *router) costView(p llmfleet.Provider, req *llmfleet.Request, info llmfleet.RequestInfo, budget time.Duration, f feasible, decide bool) (costView, bool) {
	if rt.prices == nil {
		return costView{}, false
	}
	provider, model := p.Name(), info.Model
	prices, ok := rt.prices(provider, model)
	if !ok {
		return costView{}, false
	}
	cred := rt.fingerprint(req.Credential)
	believed, missing := rt.cache.book.Request(model, cred, info.Prompt, rt.cache.book.Output(model))
	if len(missing) > 0 {
		rt.cache.readPrefixes(cred, missing) // for the turns to come
	}
	now := rt.clock.Now()
	v := costView{model: cachecost.Model{Prices: prices, Rates: rt.cache.book.Rates(provider, model, cred)}, believed: believed, at: now}
	ahead := rt.ahead(provider, model, cred, budget, f)
	v.sync = v.model.Cost(believed, cachecost.Option{Route: llmfleet.RouteSync, At: now})
	v.sync.Ahead = v.model.AheadOf(believed, v.sync, ahead)
	var opts []cachecost.Estimate
	if f.flex {
		e := v.model.Cost(believed, cachecost.Option{Route: llmfleet.RouteFlex, At: now})
		e.Ahead = v.model.AheadOf(believed, e, ahead)
		opts = append(opts, e)
	}
	if f.batch {
		b := rt.batchEstimate(v.model, provider, model, cred, believed, budget, now, v.sync.USD, ahead)
		v.batch, v.ttl1h = &b, b.TTL1h
		opts = append(opts, b)
	}
	v.choice = cachecost.Choose(rt.cache.book.Current(cred, info.Prompt.Conversation, now), cachecost.DefaultMargin, v.sync, opts...)
	if v.batch != nil && decide && !f.explore && rt.pol.CacheTrials > 0 {
		measuring := rt.cache.book.Measuring(provider, model, cred, int64(rt.pol.CacheTrials))
		if c := cachecost.Explore(v.choice, v.sync, *v.batch, measuring, cacheTrialMargin); c.Route != v.choice.Route {
			v.choice, v.ttl1h = c, c.TTL1h
			rt.cache.book.Tried(provider, model, cred)
		}
	}
	return v, true
}

// batchEstimate returns the estimate of the batch route under m: with
// the request's own TTLs, or raised to an hour where that is cheaper
// over this turn and the turns to come (see canUpgradeTTL).
func (rt *router) batchEstimate(m cachecost.Model, provider, model, cred string, believed cachecost.Request, budget time.Duration, now time.Time, rescue float64, ahead cachecost.Ahead) cachecost.Estimate {
	presumed := rt.cache.book.Presume(believed, cred, now)
	o := rt.batchOption(provider, model, budget, now, rescue)
	b := m.Cost(presumed, o)
	b.Ahead = m.AheadOf(believed, b, ahead)
	if !rt.canUpgradeTTL(provider, believed) {
		return b
	}
	o.TTL1h = true
	up := m.Cost(presumed, o)
	up.Ahead = m.AheadOf(believed, up, ahead)
	if up.USD+up.Ahead < b.USD+b.Ahead {
		return up
	}
	return b
}

// cacheTrialMargin is how much more than the route chosen a trial of the
// batch route may be expected to cost (see Policy.CacheTrials).
const cacheTrialMargin = 0.3

// ahead is what the cost model assumes of the next turn of a
// conversation of model under cred whose budget allows f (see
// cachecost.Ahead).
func (rt *router) ahead(provider, model, cred string, budget time.Duration, f feasible) cachecost.Ahead {
	if rt.pol.CacheLookAhead < 0 {
		return cachecost.Ahead{}
	}
	median := rt.predictor.at(provider, model, 0.5)
	a := cachecost.Ahead{Weight: rt.pol.CacheLookAhead, Think: rt.cache.book.Think(cred), Batchable: f.batch,
		SyncLatency: rt.syncLat.at(provider, model, 0.5), BatchLatency: median + rt.pol.BatchWindow/2}
	if f.batch && budget > 0 && !rt.pol.NoRescue { // (without a budget, nothing is rescued)
		avail := budget - rt.pol.Reserve(rt.syncLat.predict(provider, model)) - rt.pol.Slack() - rt.pol.BatchWindow/2
		a.Late = rt.predictor.lateShare(provider, model, avail, rt.flights.ages(provider, model))
	}
	return a
}

// batchOption is the batch route's Option for a request of model with
// budget, at now: its prompt reaches the batch cache after about half the
// pool's window and half the model's typical turnaround; it is late (and
// rescued, paying rescue on top) with the share of the model's
// turnarounds that would not fit its budget less the rescue's reserve.
func (rt *router) batchOption(provider, model string, budget time.Duration, now time.Time, rescue float64) cachecost.Option {
	median := rt.predictor.at(provider, model, 0.5)
	wait := rt.pol.BatchWindow / 2
	avail := budget - rt.pol.Reserve(rt.syncLat.predict(provider, model)) - rt.pol.Slack() - wait
	late := 0.0
	if !rt.pol.NoRescue && budget > 0 { // (without a budget, nothing is rescued)
		late = rt.predictor.lateShare(provider, model, avail, rt.flights.ages(provider, model))
	}
	return cachecost.Option{Route: llmfleet.RouteBatch, At: now.Add(wait + median/2), Late: late, Rescue: rescue}
}

// canUpgradeTTL tells whether a request going to batch may get its
// cache TTLs raised to an hour (the cost model then decides whether it
// pays, weighing the write against the turns to come that find the
// entry alive after the batch's wait): only when the TTL upgrade is on,
// the provider can, and the prompt has a breakpoint under an hour.
func (rt *router) canUpgradeTTL(provider string, believed cachecost.Request) bool {
	if rt.pol.NoTTLUpgrade {
		return false
	}
	if _, ok := rt.providerUpgrader(provider); !ok {
		return false
	}
	pts := believed.Points
	return len(pts) > 0 && pts[len(pts)-1].TTL < time.Hour
}

// providerUpgrader returns the TTLUpgrader of a provider, if it is one.
func (rt *router) providerUpgrader(name string) (llmfleet.TTLUpgrader, bool) {
	for _, p := range rt.providers {
		if p.Name() == name {
			u, ok := p.(llmfleet.TTLUpgrader)
			return u, ok
		}
	}
	return nil, false
}

// syncBill returns what the sync route would have paid for a request
// answered with usage u, had llmfleet not been used: by the cost model,
// with the cache state the Book believed when it was routed (v), every
// prefix held by either cache taken as the sync cache's (without
// llmfleet every turn goes sync, so what a batched turn of the
// conversation left in the batch cache would be in the sync cache), the
// sizes its usage reports. 0 when the cost model has nothing to say.
func syncBill(v *costView, u llmfleet.Usage) float64 {
	if v == nil {
		return 0
	}
	r := v.believed
	r.Points = append([]cachecost.Point(nil), r.Points...)
	for i := range r.Points {
		c := &r.Points[i].Cache
		if c.BatchUntil.After(c.SyncUntil) {
			c.SyncUntil = c.BatchUntil
		}
	}
	if n := len(r.Points); n > 0 {
		if cached := u.CacheReadInputTokens + u.CacheCreationInputTokens; cached > 0 {
			// The last breakpoint's prefix is what the usage says; the
			// shorter ones are as the Book knew them, within it.
			for i := range r.Points {
				r.Points[i].Tokens = min(r.Points[i].Tokens, cached)
			}
			r.Points[n-1].Tokens = cached
		}
	}
	r.Tokens = u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	r.Output = u.OutputTokens
	return v.model.Cost(r, cachecost.Option{Route: llmfleet.RouteSync, At: v.at}).USD
}
