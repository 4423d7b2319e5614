package dispatch

import (
	"slices"
	"time"

	"github.com/llmfleet/llmfleet"
)

// pool holds the requests that may share one batch: same provider,
// credential, model and pool key (the provider's batch-wide settings). It
// owns its items, oldest accepted first, and their bytes.
type pool struct {
	key   string
	prov  llmfleet.Provider
	first *llmfleet.Request // the first request: credential and headers
	items []*waiter
	bytes int64

	timer   llmfleet.Timer
	flushAt time.Time
}

// add appends w, keeping the items in acceptance order.
func (p *pool) add(w *waiter) {
	i := len(p.items)
	for i > 0 && p.items[i-1].accepted.After(w.accepted) {
		i--
	}
	p.items = slices.Insert(p.items, i, w)
	p.bytes += w.size()
	w.pool = p
}

// has reports whether w is in the pool (false for a nil pool).
func (p *pool) has(w *waiter) bool { return p != nil && slices.Contains(p.items, w) }

// remove takes w out; false if it was not in the pool.
func (p *pool) remove(w *waiter) bool {
	i := slices.Index(p.items, w)
	if i < 0 {
		return false
	}
	p.items = slices.Delete(p.items, i, i+1)
	p.bytes -= w.size()
	return true
}

// take removes and returns the oldest items that fit one batch of at most
// maxN requests and maxBytes bytes (at least one).
func (p *pool) take(maxN int, maxBytes int64) []*waiter {
	n, size := 0, int64(0)
	for n < len(p.items) && n < maxN && (n == 0 || size+p.items[n].size() <= maxBytes) {
		size += p.items[n].size()
		n++
	}
	out := slices.Clone(p.items[:n])
	p.items = slices.Delete(p.items, 0, n)
	p.bytes -= size
	return out
}

// policyItems returns what the policy reads of the items.
func (p *pool) policyItems(item func(*waiter) Item) []Item {
	out := make([]Item, len(p.items))
	for i, w := range p.items {
		out[i] = item(w)
	}
	return out
}

func (p *pool) stopTimer() {
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
}
