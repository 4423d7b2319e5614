package dispatch

import (
	"context"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/cachecost"
)

// cacheModel is the engine's part in the cost model: the Book (its own
// lock), the log that writes what it learns to the store, and whether
// prefix states are being read from the store (guarded by the
// dispatcher's lock).
type cacheModel struct {
	d       *Dispatcher
	book    *cachecost.Book
	writes  *cacheLog
	reading bool
}

// The engine's part in the cost model (package cachecost): the Book it
// learns prompt caching in, from every answer with usage (batched,
// rescued, sync and flex calls, and the proxy's own sync calls through
// ObserveCache), persisted to the Store (hit counts and prefix states,
// which every replica reads: the counts at start and with the fleet's
// turnarounds, the prefixes when a request names ones it does not know).

// learn teaches the Book the answer of a request of model with prompt,
// sent with cred on route (the cache of its lookup; its TTLs raised to an
// hour with ttl1h) and answered with usage u at about at; believed is
// what the Book knew of it when it was routed (nil: now). It returns the
// cost of the cache writes its route caused (LedgerEntry.MissUSD) and
// queues what it learned for the store.
func (cm *cacheModel) learn(provider, model, cred string, prompt llmfleet.Prompt, route llmfleet.Route, ttl1h bool,
	at time.Time, believed *costView, u llmfleet.Usage) float64 {
	d := cm.d
	if !prompt.Cached() || d.pol.NoLearning {
		return 0
	}
	var r cachecost.Request
	var m cachecost.Model
	if believed != nil {
		r, m = believed.believed, believed.model
	} else {
		r, _ = cm.book.Request(model, cred, prompt, u.OutputTokens)
		prices, ok := cm.prices(provider, model)
		if !ok {
			prices = cachecost.Prices{}
		}
		m = cachecost.Model{Prices: prices, Rates: cm.book.Rates(provider, model, cred)}
	}
	stat, prefixes := cm.book.Observe(cachecost.Lookup{Provider: provider, Model: model, Cred: cred, Prompt: prompt,
		Route: route, TTL1h: ttl1h, At: at, Believed: r.Points, Usage: u})
	cm.writes.add(stat, prefixes)
	return m.MissCost(r, route, at, u)
}

// prices returns a model's prices for the cost model.
func (cm *cacheModel) prices(provider, model string) (cachecost.Prices, bool) {
	d := cm.d
	if d.Prices == nil {
		return cachecost.Prices{}, false
	}
	return d.Prices(provider, model)
}

// ObserveCache learns from the answer of a sync call made outside the
// dispatcher (the proxy's sync route), and returns the cost of the cache
// writes its route caused (see llmfleet.CacheObserver).
func (d *Dispatcher) ObserveCache(req *llmfleet.Request, route llmfleet.Route, u llmfleet.Usage, at time.Time) float64 {
	p, err := d.provider(req)
	if err != nil {
		return 0
	}
	info, err := p.Inspect(req)
	if err != nil {
		return 0
	}
	return d.cache.learn(p.Name(), info.Model, d.fingerprint(req.Credential), info.Prompt, route, false, at, nil, u)
}

var _ llmfleet.CacheObserver = (*Dispatcher)(nil)

// readPrefixes reads from the store what other replicas (or an earlier
// run) learned of prefixes the Book does not know, for the turns to
// come, in a goroutine of the dispatcher's; one read at a time per
// dispatcher, the hashes asked for meanwhile dropped.
func (cm *cacheModel) readPrefixes(cred string, hashes []string) {
	d := cm.d
	if d.Store == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if cm.reading || d.closed {
		return
	}
	cm.reading = true
	d.work.run(func() {
		ctx, cancel := withTimeout(d.clock, d.ctx, 5*time.Second)
		ps, err := d.Store.Prefixes(ctx, cred, hashes)
		cancel()
		if err == nil {
			cm.book.Merge(ps)
		}
		d.mu.Lock()
		cm.reading = false
		d.mu.Unlock()
	})
}

// relearnCache loads the hit counts every replica observed into the
// Book.
func (cm *cacheModel) relearnCache(ctx context.Context) {
	d := cm.d
	if d.Store == nil || d.pol.NoLearning {
		return
	}
	if stats, err := d.Store.CacheStats(ctx); err == nil {
		cm.book.Load(stats)
	}
}
