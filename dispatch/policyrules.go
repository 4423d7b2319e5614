package dispatch

import (
	"time"

	"github.com/llmfleet/llmfleet"
)

// The Policy's rules: pure functions of their arguments and the knobs (no
// clock, no I/O), which the components ask for every decision.

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
