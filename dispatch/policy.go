package dispatch

import (
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachecost"
)

// Policy holds the dispatcher's knobs and the pure rules built on them:
// which route a budget takes, when a pool goes out, when a batch is looked
// at next. Its methods read no clock and do no I/O: every time they need
// is passed in. The zero value of every field means its default.
type Policy struct {
	// DefaultBudget is the budget of a request that comes without one.
	// Default 0: such a request goes sync (nothing is made slow unless
	// asked).
	DefaultBudget time.Duration
	// SyncMaxLatency is the largest budget that always goes sync. Default 5s.
	SyncMaxLatency time.Duration
	// BatchWindow is the longest a request waits in a pool, counted from
	// its durable acceptance. Default 30s.
	BatchWindow time.Duration
	// BatchMinSize is the pool size at which a pool goes out at once.
	// Default 10.
	BatchMinSize int
	// BatchMaxSize is the most requests one batch holds, further capped by
	// the provider's own limits. Default 100.
	BatchMaxSize int
	// PollInterval is the interval between two polls of one credential's
	// batches (see NextCheck). Default 5s.
	PollInterval time.Duration
	// MaxPollInterval caps the backoff between retries of a call that
	// failed (a poll, a results download, a lookup). Default 30s.
	MaxPollInterval time.Duration
	// TurnaroundPrior is the predicted batch turnaround of a model before
	// any of its batches has been observed. Default 120s.
	TurnaroundPrior time.Duration
	// TurnaroundPriors overrides TurnaroundPrior per model.
	TurnaroundPriors map[string]time.Duration
	// BatchPrice is the price of the batch route as a fraction of the
	// sync route's. Default 0.5.
	BatchPrice float64
	// FlushQuantile is the quantile of a model's turnarounds that a pooled
	// request's deadline must leave room for, after its rescue's reserve
	// and the slack: a pool goes out as soon as waiting longer would eat
	// into it (batch size saves no money, only calls, while waiting costs
	// the chance to be in time). Default 0.97.
	FlushQuantile float64
	// TurnaroundQuantile is the quantile of the observed turnarounds a
	// batch must fit when there is no rescue (NoRescue). Default 0.9.
	// With rescue, routing is by expected cost instead (see Route).
	TurnaroundQuantile float64
	// TurnaroundSamples is how many recent turnarounds are remembered per
	// provider and model. Default 64.
	TurnaroundSamples int
	// CreateTimeout bounds one batch create call. After it, and
	// SettleDelay, the create can no longer land. Default 2m.
	CreateTimeout time.Duration
	// SyncLatencyPrior is the predicted latency of a sync call before any
	// has been observed (a high quantile of them is learned per provider
	// and model). Default 30s.
	SyncLatencyPrior time.Duration
	// RescueMargin is the margin kept before a batched request's deadline
	// when it is rescued: a request whose answer is not in by its deadline
	// less its model's predicted sync latency and this margin is sent sync
	// as well. Default 2s.
	RescueMargin time.Duration
	// NoRescue turns deadline rescue off.
	NoRescue bool
	// HardDeadline makes the budget of a call the dispatcher sends
	// synchronously (the sync and flex routes, a batched request's rescue
	// or sending at once) a deadline: a call still unanswered when its
	// budget runs out is cut, with llmfleet.ErrBudgetExceeded. Default
	// false: the budget routes and never cuts a call already sent, which
	// is answered late and counted a budget miss (the provider bills a
	// cut call all the same). A flex attempt too slow for its budget is
	// given up for a standard call in time either way.
	HardDeadline bool
	// UpstreamTimeout bounds every call the dispatcher sends
	// synchronously, whatever its budget: a call the provider has not
	// answered by then is cut, with llmfleet.ErrUpstreamTimeout. Default
	// 10m, as the providers' SDKs; negative: none.
	UpstreamTimeout time.Duration
	// NoLearning keeps the predictions at their priors (TurnaroundPrior,
	// TurnaroundPriors, SyncLatencyPrior): observed turnarounds and sync
	// latencies are not learned from, and no batch goes out to explore a
	// model. (They are still reported to ObserveTurnaround.)
	NoLearning bool
	// SettleDelay is how long after a create's answer (or its deadline, if
	// none came) the provider's batch list is trusted to show the batch.
	// Default 2s.
	SettleDelay time.Duration
	// FlexLatencyPrior is the predicted latency of a flex call of a model
	// before any has been observed (a high quantile of them is learned
	// per provider and model, as for sync calls). Default 60s: OpenAI
	// tells flex clients to allow up to 15 minutes while third-party
	// figures put flex at sync latency plus 0-30%; a minute keeps flex off
	// budgets it has not been seen to fit.
	FlexLatencyPrior time.Duration
	// FlexRetryBackoff is the wait before the first retry of a flex call
	// refused for lack of capacity (llmfleet.ErrFlexUnavailable, which is
	// not billed); it doubles at each retry, at most MaxPollInterval. A
	// call is retried while its budget leaves room for the wait and a
	// standard call after it, then sent to the standard tier. Default 1s.
	FlexRetryBackoff time.Duration
	// FlexMaxRefusal is the largest share of a model's recent flex calls
	// refused for capacity at which a request that could be batched goes
	// flex rather than batch. Flex and batch cost the same and flex
	// answers in seconds, so flex wins while it is served; but a refused
	// flex call ends at the standard price, while a batch keeps its
	// discount unless it is late. Default 0.5.
	FlexMaxRefusal float64
	// PreferBatch sends to batch the requests that could go flex or
	// batch (flex still takes those whose budget is too short to batch).
	PreferBatch bool
	// CacheBlind routes as if prompts were never cached: by budget and
	// turnaround alone, whatever the prompt-cache state (the router
	// before the cost model; kept to measure against).
	CacheBlind bool
	// NoTTLUpgrade never raises the cache_control TTLs of a batched
	// request to an hour (see Dispatcher; serve's --cache-ttl-upgrade).
	NoTTLUpgrade bool
	// CacheBatchRate is the batch cache's hit rate assumed before any is
	// measured (batch items reading what batch items wrote; the vendor
	// says 30% to 98%, best effort). Default 0.5. Set it to the rate your
	// own usage shows: a router that does not batch never measures it.
	CacheBatchRate float64
	// CacheTrials, if above 0, lets routing try the batch route on up to
	// that many turns per provider, model and credential, each expected
	// to cost at most 30% more than the route it replaces, to measure the
	// batch cache's rate (until as many lookups are counted). Off by
	// default: on workloads whose batch cache is poor the trials cost
	// more than they teach (see docs/simulation.md).
	CacheTrials int
	// CacheLookAhead is the weight the cost model gives a conversation's
	// next turn when it compares routes (the chance it comes: see
	// cachecost.Ahead). Default 0.9; negative: no look-ahead.
	CacheLookAhead float64
	// ExploreFloor is the share of a model's turnaround prior that a
	// budget, less its rescue's reserve and the delivery slack, must
	// leave for a request to be sent to batch to learn the model's
	// turnaround: a budget far below the prior would only be rescued and
	// paid twice. Default 0.5.
	ExploreFloor float64
}

// DefaultUpstreamTimeout is Policy.UpstreamTimeout's default.
const DefaultUpstreamTimeout = 10 * time.Minute

func (p Policy) withDefaults() Policy {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&p.SyncMaxLatency, 5*time.Second)
	def(&p.BatchWindow, 30*time.Second)
	def(&p.PollInterval, 5*time.Second)
	def(&p.MaxPollInterval, 30*time.Second)
	def(&p.TurnaroundPrior, 120*time.Second)
	def(&p.CreateTimeout, 2*time.Minute)
	def(&p.SettleDelay, 2*time.Second)
	def(&p.SyncLatencyPrior, 30*time.Second)
	def(&p.RescueMargin, 2*time.Second)
	def(&p.FlexLatencyPrior, time.Minute)
	def(&p.FlexRetryBackoff, time.Second)
	if p.UpstreamTimeout == 0 {
		p.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if p.FlexMaxRefusal <= 0 || p.FlexMaxRefusal > 1 {
		p.FlexMaxRefusal = 0.5
	}
	if p.DefaultBudget < 0 {
		p.DefaultBudget = 0
	}
	if p.MaxPollInterval < p.PollInterval {
		p.MaxPollInterval = p.PollInterval
	}
	if p.BatchMinSize <= 0 {
		p.BatchMinSize = 10
	}
	if p.BatchMaxSize <= 0 {
		p.BatchMaxSize = 100
	}
	if p.BatchMinSize > p.BatchMaxSize {
		p.BatchMinSize = p.BatchMaxSize
	}
	if p.TurnaroundQuantile <= 0 || p.TurnaroundQuantile > 1 {
		p.TurnaroundQuantile = 0.9
	}
	if p.FlushQuantile <= 0 || p.FlushQuantile > 1 {
		p.FlushQuantile = 0.97
	}
	if p.CacheBatchRate <= 0 || p.CacheBatchRate > 1 {
		p.CacheBatchRate = cachecost.Priors.Batch
	}
	if p.CacheLookAhead == 0 {
		p.CacheLookAhead = 0.9
	}
	if p.ExploreFloor <= 0 {
		p.ExploreFloor = 0.5
	}
	if p.BatchPrice <= 0 || p.BatchPrice >= 1 {
		p.BatchPrice = 0.5
	}
	if p.TurnaroundSamples <= 0 {
		p.TurnaroundSamples = 64
	}
	return p
}

// WithDefaults returns p with each zero (or out of range) field set to
// its default, as the Dispatcher uses it.
func (p Policy) WithDefaults() Policy { return p.withDefaults() }

// Budget returns the budget a request is routed by: its own, or
// DefaultBudget when it has none (0).
func (p Policy) Budget(budget time.Duration) time.Duration {
	if budget <= 0 {
		return p.DefaultBudget
	}
	return budget
}

// OnTimeQuantile is the quantile of a model's turnarounds that a batch
// must fit into the time its budget leaves it. With rescue, a batch that
// comes too late costs its price and a sync call, so batching pays off
// when the batch comes in time with a probability above BatchPrice: the
// BatchPrice quantile must fit. Without rescue, a late batch breaks the
// budget: TurnaroundQuantile must fit.
func (p Policy) OnTimeQuantile() float64 {
	if p.NoRescue {
		return p.TurnaroundQuantile
	}
	return p.BatchPrice
}

// Route returns the route of a request with budget (DefaultBudget
// applied): sync for no budget or one at or under SyncMaxLatency; batch
// when the budget, less reserve (the time its rescue needs: the predicted
// sync latency and RescueMargin; 0 without rescue), covers predicted (its
// model's OnTimeQuantile turnaround) and the delivery slack; batch as well
// when explore is set (its model has no observed turnaround yet: one batch
// goes out to learn it, the rescue keeping its budget) and the budget
// covers the reserve and the slack; sync otherwise. (A request pulls its
// pool's flush forward as its budget needs, so the time until its flush
// can always be made zero.)
func (p Policy) Route(budget, predicted, reserve time.Duration, explore bool) llmfleet.Route {
	if budget <= 0 || budget <= p.SyncMaxLatency {
		return llmfleet.RouteSync
	}
	left := budget - reserve - p.Slack()
	if left >= predicted || (explore && !p.NoRescue && left > 0) {
		return llmfleet.RouteBatch
	}
	return llmfleet.RouteSync
}

// Explorable reports whether a request with budget may be sent to batch
// to learn the turnaround of a model that has none observed (prior, its
// prior), its rescue needing reserve: with rescue on, its budget less the
// reserve and the slack leaves at least ExploreFloor of the prior, a
// batch it could plausibly keep.
func (p Policy) Explorable(budget, reserve, prior time.Duration) bool {
	if p.NoRescue || budget <= p.SyncMaxLatency {
		return false
	}
	left := budget - reserve - p.Slack()
	return left > 0 && float64(left) >= p.ExploreFloor*float64(prior)
}

// Flex is what RouteFlex reads of a model's flex tier.
type Flex struct {
	// Available: the model has a flex tier (the price table says so and
	// the provider has not refused the tier for it).
	Available bool
	// Latency is the predicted latency of a flex call (a high quantile of
	// those observed, or FlexLatencyPrior).
	Latency time.Duration
	// Refusal is the share of the model's recent flex calls refused for
	// capacity.
	Refusal float64
}

// RouteFlex returns the route of a request whose sync-or-batch route is r
// (Route's answer), given its model's flex tier: flex when the model has
// one, the budget is over SyncMaxLatency and covers flex's predicted
// latency and reserve (what a standard call needs after it, should flex
// be refused), and, if r is batch, batch is not preferred and the
// model's refusal share is at most FlexMaxRefusal; r otherwise. Flex costs
// what a batch costs and answers in seconds, so it takes every request it
// fits unless it is refused too often.
func (p Policy) RouteFlex(r llmfleet.Route, budget, reserve time.Duration, f Flex) llmfleet.Route {
	if !f.Available || budget <= p.SyncMaxLatency || budget < f.Latency+reserve {
		return r
	}
	if r == llmfleet.RouteBatch && (p.PreferBatch || f.Refusal > p.FlexMaxRefusal) {
		return r
	}
	return llmfleet.RouteFlex
}

// FlexRetryAfter returns the wait before the n-th retry (from 0) of a flex
// call refused for capacity: FlexRetryBackoff doubled each time, at most
// MaxPollInterval.
func (p Policy) FlexRetryAfter(n int) time.Duration {
	return min(p.FlexRetryBackoff<<min(n, 16), p.MaxPollInterval)
}

// Reserve returns the time a rescue needs before a deadline, for a model
// whose sync calls are predicted to take syncLatency: 0 without rescue.
func (p Policy) Reserve(syncLatency time.Duration) time.Duration {
	if p.NoRescue {
		return 0
	}
	return syncLatency + p.RescueMargin
}

// Slack is the delivery margin added to a predicted turnaround: a finished
// batch is seen at most one poll interval late, and fetching results takes
// a moment more.
func (p Policy) Slack() time.Duration { return 2 * p.PollInterval }

// Item is what FlushAt reads of a pooled request.
type Item struct {
	// Accepted is when it was durably accepted.
	Accepted time.Time
	// Deadline is when its budget ends (zero: none).
	Deadline time.Time
	// Predicted is its model's FlushQuantile turnaround.
	Predicted time.Duration
	// Reserve is the time its rescue needs before its deadline.
	Reserve time.Duration
}

// FlushAt returns when a pool holding items (oldest accepted first) must
// go out: when its oldest has waited BatchWindow since its acceptance, or
// earlier if a budget in it needs that (its deadline less its rescue
// reserve, the predicted turnaround and the slack).
func (p Policy) FlushAt(items []Item) time.Time {
	if len(items) == 0 {
		return time.Time{}
	}
	at := items[0].Accepted.Add(p.BatchWindow)
	for _, it := range items {
		if it.Deadline.IsZero() {
			continue
		}
		if latest := it.Deadline.Add(-it.Reserve - it.Predicted - p.Slack()); latest.Before(at) {
			at = latest
		}
	}
	return at
}

// NextCheck returns when the batches of a credential should next be
// looked at after now: one PollInterval later, whatever their predicted
// end, so that a result reaches its caller within one poll interval of
// its batch's end even while a prediction is wrong (a prior, a
// straggler). One call (the list endpoint, or a retrieve for a single
// batch) answers for every batch of the credential, so polling costs one
// call per credential per PollInterval: 12 a minute at the default 5s,
// under the Anthropic tier 1 limit of 50 a minute on the batch endpoints.
func (p Policy) NextCheck(now time.Time) time.Time { return now.Add(p.PollInterval) }

// Settled returns when the provider's list can be trusted to show a
// batch whose create was sent with deadline createDeadline and answered
// at answeredAt (zero: no answer came, so it may land until its deadline).
func (p Policy) Settled(createDeadline, answeredAt time.Time) time.Time {
	if !answeredAt.IsZero() && answeredAt.Before(createDeadline) {
		return answeredAt.Add(p.SettleDelay)
	}
	return createDeadline.Add(p.SettleDelay)
}

// RescueAt returns when a batched request with deadline, whose sync call
// is predicted to take syncLatency, is sent sync if its answer is not in
// yet (zero: no deadline, no rescue).
func (p Policy) RescueAt(deadline time.Time, syncLatency time.Duration) time.Time {
	if deadline.IsZero() || p.NoRescue {
		return time.Time{}
	}
	return deadline.Add(-syncLatency - p.RescueMargin)
}

// Batchable reports whether a request with deadline (zero: none), whose
// sync call is predicted to take syncLatency, accepted now, can be
// batched with its rescue kept in reserve: its rescue time, less the
// delivery slack, is still to come. A request that cannot is sent sync
// at once rather than batched and rescued at once (paid twice). Without
// a deadline, or without rescue, any request can.
func (p Policy) Batchable(now, deadline time.Time, syncLatency time.Duration) bool {
	at := p.RescueAt(deadline, syncLatency)
	return at.IsZero() || at.Add(-p.Slack()).After(now)
}

// RetryAfter returns the wait before the n-th retry (from 0) of a call
// that failed: PollInterval doubled each time, at most MaxPollInterval.
func (p Policy) RetryAfter(n int) time.Duration {
	return min(p.PollInterval<<min(n, 16), p.MaxPollInterval)
}
