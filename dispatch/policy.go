package dispatch

import (
	"time"

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
	// failed (a poll, a results download, a lookup), and the wait a
	// provider asks for before a batch is looked at again
	// (Batch.PollAfter, honoured up to it). Default 30s.
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
	// 10m, as the providers' SDKs; negative: none. A provider stating a
	// longer one for a tier (llmfleet.TierTimeouts) gets its own for the
	// calls of that tier.
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
