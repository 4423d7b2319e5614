package pricing

import (
	"math"

	"github.com/llmfleet/llmfleet"
)

// Price is one model's prices in USD per million tokens at the synchronous
// route, with the multiplier of the batch route.
type Price struct {
	// Input is the price of uncached input tokens, Output of output tokens.
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	// CacheWrite5m and CacheWrite1h are the prices of tokens written to the
	// prompt cache with a 5-minute or a 1-hour TTL; CacheRead the price of
	// tokens read from it.
	CacheWrite5m float64 `json:"cache_write_5m"`
	CacheWrite1h float64 `json:"cache_write_1h"`
	CacheRead    float64 `json:"cache_read"`
	// Batch multiplies every price above on the batch route (0.5: half
	// price).
	Batch float64 `json:"batch"`
	// Flex multiplies every price above in the flex tier; 0 means the
	// model has no flex tier (see HasFlex).
	Flex float64 `json:"flex,omitempty"`
	// LongContext, when not nil, replaces the prices above for a request
	// whose whole input (uncached, cache writes and cache reads) exceeds
	// LongContextAbove tokens. Its Batch is ignored: Batch applies.
	LongContextAbove int64  `json:"long_context_above,omitempty"`
	LongContext      *Price `json:"long_context,omitempty"`
}

// Cost returns the cost in USD of usage u at route, priced at the route's
// tier (llmfleet.TierOf): the synchronous price, the flex or the batch
// one.
func (p Price) Cost(u llmfleet.Usage, route llmfleet.Route) float64 {
	return p.TierCost(u, llmfleet.TierOf(route))
}

// TierCost returns the cost in USD of usage u served in tier. The flex
// tier of a model with no flex multiplier is priced as the batch route
// (OpenAI bills flex "at Batch API rates"); the priority tier, which the
// table does not price, as the standard one.
func (p Price) TierCost(u llmfleet.Usage, tier llmfleet.Tier) float64 {
	return float64(p.picos(u, tier)) / 1e12
}

// HasFlex reports whether the model has a flex tier.
func (p Price) HasFlex() bool { return p.Flex > 0 }

// multiplier returns the multiplier of a tier.
func (p Price) multiplier(tier llmfleet.Tier) float64 {
	switch tier {
	case llmfleet.TierBatch:
		return p.Batch
	case llmfleet.TierFlex:
		if p.Flex > 0 {
			return p.Flex
		}
		return p.Batch
	}
	return 1
}

// picos returns the cost of u in pico-dollars (1e-12 USD).
func (p Price) picos(u llmfleet.Usage, tier llmfleet.Tier) int64 {
	q := p
	if p.LongContext != nil && p.LongContextAbove > 0 &&
		u.InputTokens+u.CacheCreationInputTokens+u.CacheReadInputTokens > p.LongContextAbove {
		q = *p.LongContext
	}
	mult := p.multiplier(tier)
	w5m, w1h := u.CacheWrites()
	return u.InputTokens*perToken(q.Input, mult) +
		u.OutputTokens*perToken(q.Output, mult) +
		w5m*perToken(q.CacheWrite5m, mult) +
		w1h*perToken(q.CacheWrite1h, mult) +
		u.CacheReadInputTokens*perToken(q.CacheRead, mult)
}

// perToken converts a price in USD per million tokens, times mult, to
// pico-dollars per token, rounding to the nearest pico-dollar (a price per
// million tokens has six decimals).
func perToken(perMTok, mult float64) int64 {
	return int64(math.Round(math.Round(perMTok*1e6) * mult))
}
