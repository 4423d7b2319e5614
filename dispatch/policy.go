package dispatch

import (
	"time"

	"github.com/llmfleet/llmfleet"
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
	// PollInterval is the shortest interval between two polls of one
	// credential's batches. Default 5s.
	PollInterval time.Duration
	// MaxPollInterval caps the interval between two polls of a batch whose
	// expected (or, once late, actual) age is under ten times it; an older
	// batch is polled at most every tenth of its age. Default 30s.
	MaxPollInterval time.Duration
	// TurnaroundPrior is the predicted batch turnaround before any has been
	// observed. Default 120s.
	TurnaroundPrior time.Duration
	// TurnaroundQuantile is the quantile of the observed turnarounds used as
	// the prediction. Default 0.9.
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
	// SettleDelay is how long after a create's answer (or its deadline, if
	// none came) the provider's batch list is trusted to show the batch.
	// Default 2s.
	SettleDelay time.Duration
}

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
	if p.TurnaroundSamples <= 0 {
		p.TurnaroundSamples = 64
	}
	return p
}

// Budget returns the budget a request is routed by: its own, or
// DefaultBudget when it has none (0).
func (p Policy) Budget(budget time.Duration) time.Duration {
	if budget <= 0 {
		return p.DefaultBudget
	}
	return budget
}

// Route returns the route of a request with budget (DefaultBudget applied)
// whose batch turnaround is predicted to take predicted: sync for no
// budget or one at or under SyncMaxLatency, batch when the budget covers
// the prediction and the delivery slack, sync otherwise. (A request pulls
// its pool's flush forward as its budget needs, so the time until its
// flush can always be made zero.)
func (p Policy) Route(budget, predicted time.Duration) llmfleet.Route {
	if budget <= 0 || budget <= p.SyncMaxLatency {
		return llmfleet.RouteSync
	}
	if budget >= predicted+p.Slack() {
		return llmfleet.RouteBatch
	}
	return llmfleet.RouteSync
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
	// Predicted is its model's predicted turnaround.
	Predicted time.Duration
}

// FlushAt returns when a pool holding items (oldest accepted first) must
// go out: when its oldest has waited BatchWindow since its acceptance, or
// earlier if a budget in it needs that (its deadline less the predicted
// turnaround and the slack).
func (p Policy) FlushAt(items []Item) time.Time {
	if len(items) == 0 {
		return time.Time{}
	}
	at := items[0].Accepted.Add(p.BatchWindow)
	for _, it := range items {
		if it.Deadline.IsZero() {
			continue
		}
		if latest := it.Deadline.Add(-it.Predicted - p.Slack()); latest.Before(at) {
			at = latest
		}
	}
	return at
}

// NextCheck returns when a batch submitted at submitted, predicted to take
// predicted, should next be looked at after now. Before its predicted end:
// half the time left, so the checks tighten towards the end. After it: a
// quarter of the overrun, so a late batch is checked less and less often.
// Either way at least PollInterval and at most the larger of
// MaxPollInterval and a tenth of the batch's expected or actual age.
func (p Policy) NextCheck(submitted time.Time, predicted time.Duration, now time.Time) time.Time {
	age := now.Sub(submitted)
	left := predicted - age
	iv := left / 2
	ceiling := max(p.MaxPollInterval, predicted/10)
	if left <= 0 {
		iv = -left / 4
		ceiling = max(p.MaxPollInterval, age/10)
	}
	return now.Add(max(p.PollInterval, min(iv, ceiling)))
}

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

// RetryAfter returns the wait before the n-th retry (from 0) of a call
// that failed: PollInterval doubled each time, at most MaxPollInterval.
func (p Policy) RetryAfter(n int) time.Duration {
	return min(p.PollInterval<<min(n, 16), p.MaxPollInterval)
}
