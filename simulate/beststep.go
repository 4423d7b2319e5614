package simulate

import (
	"math"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachesim"
)

// step is one turn as the best router sees it.
type step struct {
	t      Turn
	prompt llmfleet.Prompt
	// shared is the longest cacheable breakpoint within the system prompt
	// (0: none); own the longest past it that the previous turn also had
	// (0: none), with ownTTL.
	shared, own int64
	ownTTL      time.Duration
	// late is the probability that a batch comes too late for the budget;
	// batchOK and flexOK whether the routes may be taken.
	late            float64
	batchOK, flexOK bool
	// priced holds, once computed, the price of each outcome (see
	// outcomes) on each route index: shared by the step's copies
	// (withThink), as the think time changes only their chances.
	priced *[3][3]float64
}

// newStep reads turn t, whose agent's previous turn is prev (nil: none).
func (b *best) newStep(t Turn, prev *Turn) *step {
	st := &step{t: t, prompt: promptOfTurn(t)}
	var before map[string]time.Duration
	if prev != nil {
		before = map[string]time.Duration{}
		for _, bp := range promptOfTurn(*prev).Breakpoints {
			before[bp.Hash] = cachesim.TTL(bp)
		}
	}
	for _, bp := range st.prompt.Breakpoints {
		switch {
		case bp.Tokens < b.cache.MinTokens:
		case bp.Tokens <= t.SystemTokens:
			st.shared = max(st.shared, bp.Tokens)
		case before[bp.Hash] > 0 && bp.Tokens > st.own:
			st.own, st.ownTTL = bp.Tokens, before[bp.Hash]
		}
	}
	budget := b.cfg.Policy.WithDefaults().Budget(time.Duration(t.BudgetMS) * time.Millisecond)
	if budget > 0 && budget > b.syncMax {
		st.batchOK = true
		_, syncTop := b.sync(t.Model)
		lo, hi := b.turn(t.Model)
		st.late = lateProbability(budget-syncTop-b.poll, lo, hi, b.cfg.Straggler)
		_, flexTop := b.flex(t.Model)
		st.flexOK = b.prices.Flex(b.provider, t.Model) && budget >= flexTop
	}
	return st
}

// reads returns the probabilities that the turn, after state s (the
// previous turn's route index, or noPrevious), on route index r, reads
// its own prefix and the shared one.
func (st *step) reads(b *best, s, r int) (pOwn, pShared float64) {
	c := cachesim.RouteOf(bestRoutes[r])
	own, other := b.cache.Reach(c)
	if s != noPrevious && st.own > 0 {
		var after *delays
		if bestRoutes[s] == llmfleet.RouteBatch {
			after = &b.delaysOf(st.t.Model)[2] // from its run to its batch's end
		}
		gap := float64(st.ownTTL) - float64(time.Duration(st.t.ThinkMS)*time.Millisecond)
		live := b.delaysOf(st.t.Model)[r].sumBelow(after, gap)
		if cachesim.RouteOf(bestRoutes[s]) == c {
			pOwn = own * live
		} else {
			pOwn = other * live
		}
	}
	if st.shared > 0 {
		pShared = 1 - (1-own)*(1-other) - pOwn
	}
	return pOwn, pShared
}

// outcome is one way a lookup may go: what it reads, with what
// probability.
type outcome struct {
	p    float64
	read int64
}

// outcomes lists the lookup's outcomes after state s on route index r.
func (st *step) outcomes(b *best, s, r int) [3]outcome {
	pOwn, pShared := st.reads(b, s, r)
	return [3]outcome{{pOwn, st.own}, {pShared, st.shared}, {max(1-pOwn-pShared, 0), 0}}
}

// usage is the turn's usage when it reads read tokens.
func (st *step) usage(b *best, read int64) llmfleet.Usage {
	return cachesim.Bill(st.prompt, read, b.cache.MinTokens).With(st.t.OutputTokens)
}

// price is the cost of usage u on route index r (0 for a model the price
// table does not know).
func (st *step) price(b *best, u llmfleet.Usage, r int) float64 {
	c, _ := b.prices.Cost(b.provider, st.t.Model, u, bestRoutes[r])
	return c
}

// expected is the expected cost of the turn after state s on route r,
// without rescue.
func (st *step) expected(b *best, s, r int) float64 {
	priced := st.prices(b)
	c := 0.0
	for i, o := range st.outcomes(b, s, r) {
		if o.p > 0 {
			c += o.p * priced[r][i]
		}
	}
	return c
}

// prices returns the price of each outcome on each route index,
// computing them the first time.
func (st *step) prices(b *best) *[3][3]float64 {
	if st.priced == nil {
		st.priced = &[3][3]float64{}
		for r := range bestRoutes {
			for i, read := range [3]int64{st.own, st.shared, 0} {
				st.priced[r][i] = st.price(b, st.usage(b, read), r)
			}
		}
	}
	return st.priced
}

// cost is the expected cost of the turn after state s on route r, a late
// batch's rescue included; false when the route may not be taken.
func (st *step) cost(b *best, s, r int) (float64, bool) {
	switch bestRoutes[r] {
	case llmfleet.RouteFlex:
		if !st.flexOK {
			return 0, false
		}
	case llmfleet.RouteBatch:
		if !st.batchOK {
			return 0, false
		}
		return st.expected(b, s, r) + st.late*st.expected(b, s, 0), true
	}
	return st.expected(b, s, r), true
}

// account adds the turn's expected cache figures (and its rescue's) on
// route r after state s.
func (st *step) account(b *best, s, r int) {
	st.add(b, s, r, 1)
	if bestRoutes[r] == llmfleet.RouteBatch && st.late > 0 {
		st.add(b, s, 0, st.late)
		b.rescues += st.late
	}
}

// add adds weight w of the turn's expected cache figures on route r.
func (st *step) add(b *best, s, r int, w float64) {
	name := string(bestRoutes[r])
	e := b.stats[name]
	if e == nil {
		e = &expStats{}
		b.stats[name] = e
	}
	e.answers += w
	for _, o := range st.outcomes(b, s, r) {
		u := st.usage(b, o.read)
		if o.read > 0 {
			e.reads += w * o.p
		}
		e.read += w * o.p * float64(u.CacheReadInputTokens)
		e.write += w * o.p * float64(u.CacheCreationInputTokens)
	}
}

// expStats are expected cache figures.
type expStats struct{ answers, reads, read, write float64 }

// round returns them rounded, as CacheStats.
func (e *expStats) round() CacheStats {
	c := CacheStats{Answers: int(math.Round(e.answers)), Reads: int(math.Round(e.reads)),
		ReadTokens: int64(math.Round(e.read)), WriteTokens: int64(math.Round(e.write))}
	if e.read+e.write > 0 {
		c.HitRate = e.read / (e.read + e.write)
	}
	return c
}
