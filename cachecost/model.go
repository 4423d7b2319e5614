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
var Priors = Rates{Sync: 1, Batch: 0.5, Cross: 0}

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
	// Presumed tells that its batch cache entry is presumed, not known
	// (see Book.Presume).
	Presumed bool
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
	// Ahead is the weighted expected bill of the conversation's next
	// turn's prefix from the state this option leaves (see Ahead); the
	// options are compared on USD + Ahead.
	Ahead float64
}

// Model is the cost model of one model's requests: its prices and the
// hit rates learned for its caches.
type Model struct {
	Prices Prices
	Rates  Rates
}

// Cost returns the expected bill of sending r as o. A lookup reaches
// its own cache (at the Rates' own-cache rate) and the other cache (at
// the cross rate), each once for all its prefixes, and reads the longest
// prefix alive in a cache it reached; it writes from there to its last
// breakpoint.
func (m Model) Cost(r Request, o Option) Estimate {
	e := Estimate{Option: o}
	class := o.Route
	if class == llmfleet.RouteFlex {
		class = llmfleet.RouteSync // flex calls use the sync cache
	}
	own, other := m.longest(r.Points, class, o.At)
	a, c := m.Rates.own(class), m.Rates.Cross
	if own < 0 {
		a = 0
	}
	if other < 0 {
		c = 0
	}
	for _, outcome := range []struct {
		p   float64
		hit int
	}{
		{a * c, max(own, other)}, {a * (1 - c), own}, {(1 - a) * c, other}, {(1 - a) * (1 - c), -1},
	} {
		if outcome.p <= 0 {
			continue
		}
		if outcome.hit >= 0 {
			e.Hit += outcome.p
			e.Read += outcome.p * float64(r.Points[outcome.hit].Tokens)
		}
		w5, w1 := writes(r.Points, outcome.hit, o.TTL1h)
		e.Write5m += outcome.p * w5
		e.Write1h += outcome.p * w1
	}
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

// longest returns the longest point alive at t in the cache of lookups
// of class (own), and in the other cache (other); -1 for none.
func (m Model) longest(pts []Point, class llmfleet.Route, t time.Time) (own, other int) {
	own, other = -1, -1
	for i, pt := range pts {
		syncCache, batchCache := pt.Cache.alive(t)
		if class == llmfleet.RouteBatch {
			syncCache, batchCache = batchCache, syncCache
		}
		if syncCache {
			own = i
		}
		if batchCache {
			other = i
		}
	}
	return own, other
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

// Ahead is what the cost model assumes of a conversation's turns to
// come, to weigh the cache state each option leaves: a turn sent sync
// leaves its prompt in the sync cache, a batched one in the batch cache,
// and the next turn, which continues that prompt, reads it there or
// writes it again, and leaves it in turn. The options are compared on
// their expected bill plus the expected bill of the prompt prefix over
// the conversation's turns to come (Estimate.Ahead): the value of the
// state each option leaves, as a small Markov decision process over the
// states of the prefix (warm in the sync cache, warm in the batch cache,
// cold), its turns following one another with probability Weight.
type Ahead struct {
	// Weight is the chance that a conversation's turn has a next one;
	// 0: no look-ahead.
	Weight float64
	// Think are times from a turn's answer to its next turn's lookup, as
	// seen lately (their distribution: the next turn finds the prefix
	// warm with the share of them under its TTL).
	Think []time.Duration
	// Batchable tells whether the turns to come may be batched (their
	// budget, like this one's, allows it); Late is then a batch's chance
	// to be rescued.
	Batchable bool
	Late      float64
	// SyncLatency and BatchLatency are the expected times from a turn's
	// arrival to its answer on each route.
	SyncLatency, BatchLatency time.Duration
}

// AheadOf returns the expected bill of the prompt prefix e's option
// leaves cached (its last breakpoint's) over the conversation's turns to
// come, from the state it leaves (see Ahead); the turns' new tokens are
// left out (the same whatever the state).
func (m Model) AheadOf(r Request, e Estimate, a Ahead) float64 {
	n := len(r.Points)
	if a.Weight <= 0 || n == 0 {
		return 0
	}
	last := r.Points[n-1]
	ttl := last.TTL
	if e.TTL1h {
		ttl = time.Hour
	}
	// Each turn to come writes what it adds to the prompt (about what
	// this one added to the last) and gets its answer: at the price of
	// the route it takes.
	grown := last.Tokens
	if n > 1 {
		grown -= r.Points[n-2].Tokens
	}
	write := m.Prices.Write5m
	if ttl >= time.Hour {
		write = m.Prices.Write1h
	}
	rest := float64(max(grown, 0))*write + float64(r.Output)*m.Prices.Output
	v := m.values(float64(last.Tokens), rest, ttl, a)
	if classOf(e.Route) == llmfleet.RouteBatch {
		return a.Weight * v.after(v.warmBatch, stateBatch)
	}
	return a.Weight * v.after(v.warmSync, stateSync)
}

// The states of a conversation's prefix between its turns.
const (
	stateSync = iota
	stateBatch
	stateCold
)

// prefixValues is the value (expected bill over the turns to come) of
// each state of a prefix, and the chance a turn's successor finds it
// warm after a sync and after a batched turn.
type prefixValues struct {
	v                   [3]float64
	warmSync, warmBatch float64
}

// after returns the value of the state a turn leaves: state with
// probability warm, else cold.
func (pv prefixValues) after(warm float64, state int) float64 {
	return warm*pv.v[state] + (1-warm)*pv.v[stateCold]
}

// values solves the decision process of a prefix of t tokens with ttl,
// each turn paying rest besides (at the route's price).
func (m Model) values(t, rest float64, ttl time.Duration, a Ahead) prefixValues {
	p := m.Prices
	write := p.Write5m
	if ttl >= time.Hour {
		write = p.Write1h
	}
	look := func(rate float64) float64 { return rate*t*p.Read + (1-rate)*t*write }
	// cost[state][action]: action 0 sync, 1 batch.
	syncFrom := [3]float64{look(m.Rates.Sync), look(m.Rates.Cross), t * write}
	batchFrom := [3]float64{look(m.Rates.Cross), look(m.Rates.Batch), t * write}
	pv := prefixValues{warmSync: warmShare(a.Think, a.SyncLatency, ttl), warmBatch: warmShare(a.Think, a.BatchLatency, ttl)}
	for range 40 {
		var next [3]float64
		for s := range 3 {
			best := syncFrom[s] + rest + a.Weight*pv.after(pv.warmSync, stateSync)
			if a.Batchable {
				b := p.Batch*(batchFrom[s]+rest) + a.Late*(syncFrom[s]+rest) + a.Weight*pv.after(pv.warmBatch, stateBatch)
				best = min(best, b)
			}
			next[s] = best
		}
		pv.v = next
	}
	return pv
}

// warmShare returns the share of think times after which a prefix
// written (or read) halfway through a wait of latency is still alive,
// with ttl.
func warmShare(think []time.Duration, latency, ttl time.Duration) float64 {
	if len(think) == 0 {
		return 1
	}
	n := 0
	for _, th := range think {
		if th+latency/2 < ttl {
			n++
		}
	}
	return float64(n) / float64(len(think))
}
