package cachecost

import (
	"time"

	"github.com/llmfleet/llmfleet"
)

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
// written (or read) by a turn is still alive, with ttl, when its
// conversation's next turn looks it up: a wait of latency after the
// entry was written (a batch item writes it halfway through its batch's
// turnaround, and the next turn's item reads it halfway through its own,
// after the pool's wait) plus the think time.
func warmShare(think []time.Duration, latency, ttl time.Duration) float64 {
	if len(think) == 0 {
		return 1
	}
	n := 0
	for _, th := range think {
		if th+latency < ttl {
			n++
		}
	}
	return float64(n) / float64(len(think))
}
