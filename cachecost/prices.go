package cachecost

import (
	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/pricing"
)

// Prices are one model's prices in USD per token in the standard tier,
// and the multipliers of the discounted routes.
type Prices struct {
	Input, Output, Write5m, Write1h, Read float64
	// Batch and Flex multiply every price above on the batch route and in
	// the flex tier.
	Batch, Flex float64
}

// PricesOf returns the cost model's form of a price table's prices.
func PricesOf(p pricing.Price) Prices {
	flex := p.Flex
	if flex == 0 {
		flex = p.Batch
	}
	return Prices{Input: p.Input / 1e6, Output: p.Output / 1e6, Write5m: p.CacheWrite5m / 1e6,
		Write1h: p.CacheWrite1h / 1e6, Read: p.CacheRead / 1e6, Batch: p.Batch, Flex: flex}
}

// multiplier returns the price multiplier of a route.
func (p Prices) multiplier(r llmfleet.Route) float64 {
	switch r {
	case llmfleet.RouteBatch:
		return p.Batch
	case llmfleet.RouteFlex:
		return p.Flex
	}
	return 1
}

// Rates are the probabilities that a lookup of a live cache entry hits:
// by whether the entry is in the lookup's own cache (the sync cache for
// sync and flex calls, the batch cache for batch items) or only in the
// other one.
type Rates struct {
	// Sync is a sync lookup's, of an entry sync calls wrote.
	Sync float64
	// Batch is a batch item's, of an entry batch items wrote (best
	// effort).
	Batch float64
	// Cross is a lookup's of an entry only the other cache holds.
	Cross float64
}

// Priors are the Rates assumed before any is learned: sync calls read
// what sync calls wrote; batch items read batch-written entries half the
// time; across the caches, seldom.
var Priors = Rates{Sync: 1, Batch: 0.5, Cross: 0}

// own returns the rate of a lookup on route r of an entry r's cache
// holds.
func (rt Rates) own(r llmfleet.Route) float64 {
	if r == llmfleet.RouteBatch {
		return rt.Batch
	}
	return rt.Sync
}
