package cachesim

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Prefix is a prompt prefix a lookup may read without writing it: an
// earlier position the API looks back to from a breakpoint.
type Prefix struct {
	// Hash identifies the prefix, as llmfleet.Breakpoint.Hash does.
	Hash string
	// Tokens is its size.
	Tokens int64
}

// Lookup is one request's use of the cache.
type Lookup struct {
	// Key identifies the API key (a fingerprint will do): keys never
	// share entries.
	Key string
	// Route is the cache the request reads first and writes.
	Route Route
	// Now is when the request is processed.
	Now time.Time
	// Prompt is the request's prompt.
	Prompt llmfleet.Prompt
	// Lookback, when not nil, holds for breakpoint i (Lookback[i]) the
	// earlier prefixes it also reads (the API looks back up to 20 blocks
	// from a breakpoint for an entry an earlier request wrote).
	Lookback [][]Prefix
}

// entryKey identifies one entry: a prefix in one cache of one key.
type entryKey struct {
	key   string
	route Route
	hash  string
}

// entry is one cached prefix.
type entry struct {
	expires time.Time
	ttl     time.Duration
}

// Cache is a provider's prompt cache: per API key, a sync and a batch
// cache (see the package documentation). It is safe for concurrent use.
type Cache struct {
	cfg     Config
	mu      sync.Mutex
	entries map[entryKey]entry
	ops     int
}

// New returns an empty cache behaving as cfg says (rates outside [0, 1]
// are clamped).
func New(cfg Config) *Cache {
	clamp := func(v float64) float64 { return min(max(v, 0), 1) }
	cfg.SyncHitRate, cfg.BatchHitRate, cfg.CrossRate = clamp(cfg.SyncHitRate), clamp(cfg.BatchHitRate), clamp(cfg.CrossRate)
	return &Cache{cfg: cfg, entries: map[entryKey]entry{}}
}

// Config returns the cache's configuration.
func (c *Cache) Config() Config { return c.cfg }

// Use looks l's prompt up, reads and refreshes the longest live prefix in
// a cache the lookup reaches, writes the breakpoints past it into l's
// route's cache, and returns the input side of the request's usage. It
// draws two numbers from r (which must not be nil), whatever the rates:
// whether the lookup reaches its own route's cache, then the other's.
func (c *Cache) Use(l Lookup, r *rand.Rand) Usage {
	ownRate, otherRate := c.cfg.Reach(l.Route)
	own, other := r.Float64() < ownRate, r.Float64() < otherRate
	c.mu.Lock()
	defer c.mu.Unlock()
	var (
		read int64
		hit  entryKey
		ok   bool
	)
	consider := func(hash string, tokens int64) {
		if tokens <= read {
			return
		}
		for _, k := range [2]entryKey{{l.Key, l.Route, hash}, {l.Key, 1 - l.Route, hash}} {
			reached := own
			if k.route != l.Route {
				reached = other
			}
			if e, found := c.entries[k]; reached && found && e.expires.After(l.Now) {
				read, hit, ok = tokens, k, true
				return
			}
		}
	}
	for i, b := range l.Prompt.Breakpoints {
		if b.Tokens < c.cfg.MinTokens {
			continue
		}
		consider(b.Hash, b.Tokens)
		if i < len(l.Lookback) {
			for _, p := range l.Lookback[i] {
				consider(p.Hash, p.Tokens)
			}
		}
	}
	if ok {
		e := c.entries[hit]
		e.expires = l.Now.Add(e.ttl) // a hit refreshes the TTL
		c.entries[hit] = e
	}
	wrote := false
	for _, b := range l.Prompt.Breakpoints {
		if b.Tokens <= read || b.Tokens < c.cfg.MinTokens {
			continue
		}
		ttl := TTL(b)
		c.entries[entryKey{l.Key, l.Route, b.Hash}] = entry{expires: l.Now.Add(ttl), ttl: ttl}
		wrote = true
	}
	if wrote {
		c.prune(l.Now)
	}
	return Bill(l.Prompt, read, c.cfg.MinTokens)
}

// Live reports whether the prefix hash has an entry live at now in key's
// cache of route (without touching it), for tests and reports.
func (c *Cache) Live(key string, route Route, hash string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[entryKey{key, route, hash}]
	return ok && e.expires.After(now)
}

// prune drops expired entries now and then. The caller holds mu.
func (c *Cache) prune(now time.Time) {
	c.ops++
	if c.ops%256 != 0 {
		return
	}
	for k, e := range c.entries {
		if !e.expires.After(now) {
			delete(c.entries, k)
		}
	}
}
