package simulate

import (
	"math"
	"slices"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/pricing"
)

// The provider's default ranges (see Provider).
var (
	defaultTurnaround  = [2]time.Duration{2 * time.Minute, 10 * time.Minute}
	defaultSyncLatency = [2]time.Duration{time.Second, 3 * time.Second}
)

// Bound returns what the best router with a sync fallback could expect to
// save on turns under cfg, in USD, and whether it is known: false when a
// draw function (Config.Turnaround or Config.SyncLatency) is set without
// its range, whose distribution is then unknown, and for a workload with
// prompt structures, whose cost depends on the prompt cache (see
// BestCached).
//
// That router knows each model's turnaround distribution (uniform over
// its TurnaroundRange, times Straggler.Factor with probability
// Straggler.Fraction) and its sync latency distribution (uniform over its
// SyncLatencyRange), but not the draws. It decides each request alone,
// at its arrival, by expected cost: sync costs c, the request's cost at
// the sync price (priced as the report prices ledger entries: the price
// table, the request's model and usage); batched, it pays the batch price
// b, and when its batch comes too late it is rescued by a sync call and
// pays c as well, so it expects b + P(late)·c. The request's expected
// saving is max(0, c − b − P(late)·c), and the bound is their sum.
//
// A batch is late when its turnaround exceeds the budget (the policy's
// Budget of the request's own) less the time a rescue needs, taken as the
// top of the model's sync latency range (a rescue started then always
// answers in time), and less one poll interval of the policy, the delay
// with which a finished batch is seen. P(late) is computed exactly from
// the uniform and straggler mixture (see lateProbability). A request
// whose budget is at or under the policy's SyncMaxLatency goes sync and
// saves 0.
//
// A model with a flex tier (the price table's word) may instead go flex:
// when the budget covers the top of its flex latency range, the request
// pays the flex price (refusals, Config.FlexRefusal, are taken as retried
// until served: optimistic); the router takes the better of the two.
//
// The bound is optimistic where the engine has costs it leaves out: it
// sends each request out the moment it arrives (no pool window), in a
// batch of its model alone (the simulated provider ends a batch with the
// slowest of its models' turnarounds), and knows the distributions the
// engine has to learn.
func Bound(cfg Config, turns []Turn) (usd float64, known bool) {
	if (cfg.Turnaround != nil && cfg.TurnaroundRange == nil) || (cfg.SyncLatency != nil && cfg.SyncLatencyRange == nil) ||
		(cfg.FlexLatency != nil && cfg.FlexLatencyRange == nil) || slices.ContainsFunc(turns, Turn.Prompted) {
		return 0, false
	}
	prices := cfg.Prices
	if prices == nil {
		prices = pricing.Default()
	}
	pol := cfg.Policy.WithDefaults()
	turnaround := rangeOr(cfg.TurnaroundRange, defaultTurnaround)
	syncLatency := rangeOr(cfg.SyncLatencyRange, defaultSyncLatency)
	provider := (&Provider{ProviderName: cfg.Provider}).Name()
	flexLatency := rangeOr(cfg.FlexLatencyRange, DefaultFlexLatency)
	var nanos int64
	for _, t := range turns {
		budget := pol.Budget(time.Duration(t.BudgetMS) * time.Millisecond)
		if budget <= 0 || budget <= pol.SyncMaxLatency {
			continue
		}
		e := ledger.Make(prices.Cost, llmfleet.LedgerEntry{Provider: provider, Model: t.Model, Route: llmfleet.RouteBatch,
			Usage: usageOf(Body{InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, CacheRead: t.CacheReadTokens, CacheWrite: t.CacheWriteTokens})})
		if !e.Priced {
			continue
		}
		c, b := e.OtherRouteUSD, e.CostUSD
		_, syncTop := syncLatency(t.Model)
		lo, hi := turnaround(t.Model)
		late := lateProbability(budget-syncTop-pol.PollInterval, lo, hi, cfg.Straggler)
		saving := c - b - late*c
		if prices.Flex(provider, t.Model) {
			// Flex: its price, in time whatever its draw (a refusal is
			// retried at no cost: the bound assumes retries succeed).
			_, flexTop := flexLatency(t.Model)
			f := ledger.Make(prices.Cost, llmfleet.LedgerEntry{Provider: provider, Model: t.Model, Route: llmfleet.RouteFlex,
				Tier: llmfleet.TierFlex, Usage: e.Usage})
			if budget >= flexTop && f.Priced {
				saving = max(saving, c-f.CostUSD)
			}
		}
		if saving > 0 {
			nanos += int64(math.Round(saving * 1e9))
		}
	}
	return float64(nanos) / 1e9, true
}

// rangeOr returns r, or def for every model when r is nil.
func rangeOr(r func(string) (time.Duration, time.Duration), def [2]time.Duration) func(string) (time.Duration, time.Duration) {
	if r != nil {
		return r
	}
	return func(string) (time.Duration, time.Duration) { return def[0], def[1] }
}

// lateProbability returns the probability that a batch turnaround exceeds
// avail, the turnaround being uniform over [lo, hi], and multiplied by
// s.Factor with probability s.Fraction:
//
//	P(late) = (1 − f)·P(U > avail) + f·P(F·U > avail)
//
// where P(U > x) is 1 below lo, 0 from hi on, and (hi − x)/(hi − lo) in
// between.
func lateProbability(avail, lo, hi time.Duration, s Straggler) float64 {
	f := min(max(s.Fraction, 0), 1)
	p := (1 - f) * over(float64(avail), float64(lo), float64(hi))
	if f > 0 {
		// F·U > x is U > x/F; a factor of 0 makes every turnaround 0.
		straggler := 0.0
		if s.Factor > 0 {
			straggler = over(float64(avail)/s.Factor, float64(lo), float64(hi))
		} else if avail < 0 {
			straggler = 1
		}
		p += f * straggler
	}
	return p
}

// over returns P(U > x) for U uniform over [lo, hi] (lo itself when hi is
// not above lo).
func over(x, lo, hi float64) float64 {
	switch {
	case x < lo:
		return 1
	case x >= hi:
		return 0
	default:
		return (hi - x) / (hi - lo)
	}
}
