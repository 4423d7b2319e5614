package cachecost

import (
	"time"

	"github.com/llmfleet/llmfleet"
)

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
