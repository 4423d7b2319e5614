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
	// LongContext, when not nil, replaces the prices above for a request
	// whose whole input (uncached, cache writes and cache reads) exceeds
	// LongContextAbove tokens. Its Batch is ignored: Batch applies.
	LongContextAbove int64  `json:"long_context_above,omitempty"`
	LongContext      *Price `json:"long_context,omitempty"`
}

// Cost returns the cost in USD of usage u at route; any route but
// llmfleet.RouteBatch is priced as the synchronous one.
func (p Price) Cost(u llmfleet.Usage, route llmfleet.Route) float64 {
	return float64(p.picos(u, route)) / 1e12
}

// picos returns the cost of u in pico-dollars (1e-12 USD).
func (p Price) picos(u llmfleet.Usage, route llmfleet.Route) int64 {
	q := p
	if p.LongContext != nil && p.LongContextAbove > 0 &&
		u.InputTokens+u.CacheCreationInputTokens+u.CacheReadInputTokens > p.LongContextAbove {
		q = *p.LongContext
	}
	mult := 1.0
	if route == llmfleet.RouteBatch {
		mult = p.Batch
	}
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
