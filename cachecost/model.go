// Package cachecost is llmfleet's cost model: what a request is expected
// to cost on each route it could take, with its prompt cache in mind. It
// is pure: no clock (every time is passed in), no I/O, no state; the
// engine (package dispatch) feeds it what it learned (Book) and routes by
// its answer.
//
// A cached prefix is read at a tenth of the input price (per model: Opus
// 5.5 reads at 0.05×) and written at 1.25× (5-minute TTL) or 2× (1-hour);
// the batch and flex discounts halve all of them. A sync call finds what
// sync calls wrote within their TTL (nearly always); a batch item finds
// what batch items wrote only at best (30% to 98% of the time, by the
// vendor's docs), and the two caches barely see each other's entries. So
// the cheapest route for an agent's turn is a question of its cache state
// as much as of its discount: a warm turn read from the sync cache costs
// far less than the same turn batched and written again at half price.
//
// Model.Cost answers, for one request and one way of sending it (an
// Option: a route, at a time its prompt reaches the provider's cache,
// with a probability of being rescued), the expected bill: over the
// breakpoints of its prompt from the longest, the probability that the
// lookup hits there (its entry alive in the lookup's own cache at the
// Rates' own-cache rate, or only in the other cache at the cross rate),
// the reads, writes (at the TTLs' prices) and uncached input that follow,
// its output, all at the route's price, and, for a batch, the expected
// rescue: a sync call paid on top with its late probability.
package cachecost

import (
	"time"

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
var Priors = Rates{Sync: 1, Batch: 0.5, Cross: 0.2}

// own returns the rate of a lookup on route r of an entry r's cache
// holds.
func (rt Rates) own(r llmfleet.Route) float64 {
	if r == llmfleet.RouteBatch {
		return rt.Batch
	}
	return rt.Sync
}

// Entry is what is known of the cache entries of one prefix: when the
// sync cache's and the batch cache's expire (zero: none known).
type Entry struct {
	SyncUntil, BatchUntil time.Time
}

// alive returns whether each cache holds the entry at t.
func (e Entry) alive(t time.Time) (syncCache, batchCache bool) {
	return e.SyncUntil.After(t), e.BatchUntil.After(t)
}

// Point is a prefix of a request's prompt that its cache lookup may read:
// a breakpoint, or an earlier prefix the lookup looks back to (an earlier
// turn's breakpoint), as the cost model reads it.
type Point struct {
	// Hash names the prefix.
	Hash string
	// Tokens is the prefix's size (learned from usage, else estimated).
	Tokens int64
	// TTL is the time to live its cache_control asks for; 0 for an
	// earlier prefix, which this request does not write.
	TTL time.Duration
	// Cache is what is known of its entries.
	Cache Entry
}

// written reports whether a lookup that misses writes the point: a
// breakpoint's prefix is written, an earlier prefix is not.
func (p Point) written() bool { return p.TTL > 0 }

// Request is what the cost model reads of a request.
type Request struct {
	// Points are its prompt's breakpoints, and the earlier prefixes known
	// to have been cached, in prompt order (growing); the last is its
	// last breakpoint.
	Points []Point
	// Tokens is its whole input; Output its expected output.
	Tokens, Output int64
}

// Option is one way of sending a request.
type Option struct {
	// Route is the route.
	Route llmfleet.Route
	// TTL1h upgrades every breakpoint's TTL to an hour (a batch's wait
	// can outlast 5 minutes).
	TTL1h bool
	// At is when the prompt is expected to reach the provider's cache:
	// now for a sync or flex call, after the pool's wait and a typical
	// turnaround for a batch.
	At time.Time
	// Late is the probability that a batch comes too late and the request
	// is rescued: a sync call, paid on top (Rescue is its bill).
	Late   float64
	Rescue float64
}

// Estimate is the expected bill of one Option.
type Estimate struct {
	Option
	// USD is the expected bill, the rescue's share included.
	USD float64
	// Read, Write5m and Write1h are the expected cache reads and writes,
	// in tokens; Input the uncached input.
	Read, Write5m, Write1h, Input float64
	// Hit is the probability that the lookup reads a cached prefix.
	Hit float64
}

// Model is the cost model of one model's requests: its prices and the
// hit rates learned for its caches.
type Model struct {
	Prices Prices
	Rates  Rates
}

// Cost returns the expected bill of sending r as o.
func (m Model) Cost(r Request, o Option) Estimate {
	e := Estimate{Option: o}
	class := o.Route
	if class == llmfleet.RouteFlex {
		class = llmfleet.RouteSync // flex calls use the sync cache
	}
	miss := 1.0 // the probability that no longer prefix was hit
	for i := len(r.Points) - 1; i >= 0 && miss > 0; i-- {
		p := m.hitProb(r.Points[i], class, o.At)
		if p <= 0 {
			continue
		}
		hit := miss * p
		e.Hit += hit
		e.Read += hit * float64(r.Points[i].Tokens)
		w5, w1 := writes(r.Points, i, o.TTL1h)
		e.Write5m += hit * w5
		e.Write1h += hit * w1
		miss -= hit
	}
	w5, w1 := writes(r.Points, -1, o.TTL1h)
	e.Write5m += miss * w5
	e.Write1h += miss * w1
	last := int64(0)
	if n := len(r.Points); n > 0 {
		last = r.Points[n-1].Tokens
	}
	e.Input = float64(max(r.Tokens-last, 0))
	p := m.Prices
	e.USD = p.multiplier(o.Route) * (e.Read*p.Read + e.Write5m*p.Write5m + e.Write1h*p.Write1h +
		e.Input*p.Input + float64(r.Output)*p.Output)
	if o.Route == llmfleet.RouteBatch {
		e.USD += o.Late * o.Rescue
	}
	return e
}

// hitProb returns the probability that a lookup of class (sync or
// batch) at t hits the entry of point pt.
func (m Model) hitProb(pt Point, class llmfleet.Route, t time.Time) float64 {
	syncCache, batchCache := pt.Cache.alive(t)
	own, other := syncCache, batchCache
	if class == llmfleet.RouteBatch {
		own, other = batchCache, syncCache
	}
	switch {
	case own:
		return m.Rates.own(class)
	case other:
		return m.Rates.Cross
	}
	return 0
}

// writes returns the tokens written, at the 5-minute and the 1-hour
// TTL, by a lookup that hit breakpoint hit (-1: none): from the hit to
// the last breakpoint, the 1-hour writes covering up to the last 1-hour
// breakpoint after the hit (every breakpoint with ttl1h).
func writes(pts []Point, hit int, ttl1h bool) (w5, w1 float64) {
	if len(pts) == 0 || hit == len(pts)-1 {
		return 0, 0
	}
	from := int64(0)
	if hit >= 0 {
		from = pts[hit].Tokens
	}
	last := pts[len(pts)-1].Tokens
	b := -1
	for i := hit + 1; i < len(pts); i++ {
		if pts[i].written() && (ttl1h || pts[i].TTL >= time.Hour) {
			b = i
		}
	}
	if b < 0 {
		return float64(max(last-from, 0)), 0
	}
	upto := pts[b].Tokens
	return float64(max(last-upto, 0)), float64(max(upto-from, 0))
}

// MissCost returns what a request, believed r when it was routed and
// answered on route with usage u (its lookup at about at), paid for cache
// writes its route caused: when the longest prefix believed cached was
// held only by the other cache (a batched turn of a conversation warm in
// the sync cache, or a sync turn of one warm in the batch cache) and was
// written again, the tokens written again, priced as a write less a read
// at the route's price. 0 when its own cache held the prefix (a miss
// there is the cache's, not the route's), or nothing was written again.
func (m Model) MissCost(r Request, route llmfleet.Route, at time.Time, u llmfleet.Usage) float64 {
	class := classOf(route)
	for j := len(r.Points) - 1; j >= 0; j-- {
		syncCache, batchCache := r.Points[j].Cache.alive(at)
		if !syncCache && !batchCache {
			continue
		}
		if (class == llmfleet.RouteBatch && batchCache) || (class == llmfleet.RouteSync && syncCache) {
			return 0
		}
		again := min(r.Points[j].Tokens-u.CacheReadInputTokens, u.CacheCreationInputTokens)
		if again <= 0 {
			return 0
		}
		write := m.Prices.Write5m
		if r.Points[j].TTL >= time.Hour {
			write = m.Prices.Write1h
		}
		return float64(again) * (write - m.Prices.Read) * m.Prices.multiplier(route)
	}
	return 0
}
