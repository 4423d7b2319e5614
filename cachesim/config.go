// Package cachesim models a provider's prompt cache (Anthropic's, as its
// documentation and the measurements in the project's spec describe it),
// once, for the emulator and the simulator alike.
//
// It works on the abstract shape of a request, llmfleet.Prompt: the
// prompt's cache breakpoints (the hash of the prefix up to each, its size
// in tokens, its TTL) and its total size. Entries are kept per API key
// (two keys never share one) in two caches, one for the sync route (which
// flex also uses) and one for the batch route. A lookup:
//
//   - draws, once per lookup, whether its own route's cache is reachable
//     (with probability Config.SyncHitRate for a sync lookup,
//     Config.BatchHitRate for a batch one: batch reads are best effort)
//     and whether the other route's cache is (Config.CrossRate; 0 by
//     default: the caches are apart);
//   - reads the longest prefix, among its breakpoints (and the earlier
//     prefixes each may look back to, Lookup.Lookback), that has a live
//     entry in a reachable cache, and refreshes that entry's TTL;
//   - writes, into its own route's cache, every breakpoint past what it
//     read, each with its TTL; the tokens written up to the last 1-hour
//     breakpoint are billed as 1-hour writes, the rest up to the last
//     breakpoint as 5-minute writes (see Bill);
//   - ignores breakpoints shorter than Config.MinTokens.
//
// Randomness comes from the caller's source (seeded per request), so that
// a run is reproducible.
package cachesim

import (
	"fmt"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Route is the cache a lookup reads first and writes: the sync route's or
// the batch route's.
type Route int

const (
	// Sync is the cache of synchronous calls, flex calls included.
	Sync Route = iota
	// Batch is the cache of batch requests.
	Batch
)

// String returns "sync" or "batch".
func (r Route) String() string {
	if r == Batch {
		return "batch"
	}
	return "sync"
}

// RouteOf returns the cache of a request served on route: Batch for the
// batch route, Sync for the sync and flex routes.
func RouteOf(r llmfleet.Route) Route {
	if r == llmfleet.RouteBatch {
		return Batch
	}
	return Sync
}

// Config is a cache's behaviour. Rates are probabilities, from 0 to 1.
type Config struct {
	// SyncHitRate is the probability that a sync lookup reaches the sync
	// cache (reads an entry live in it). Default 1.
	SyncHitRate float64 `json:"sync_hit_rate"`
	// BatchHitRate is the probability that a batch lookup reaches the
	// batch cache. The vendor calls batch hits best effort ("30% to 98%");
	// default 1, which leaves only the misses of separate caches and of
	// expiry.
	BatchHitRate float64 `json:"batch_hit_rate"`
	// CrossRate is the probability that a lookup reaches the other
	// route's cache too: a batch reading what a sync call wrote, or the
	// reverse. Default 0: the caches are apart, as measured.
	CrossRate float64 `json:"cross_rate"`
	// MinTokens is the shortest prefix the cache holds: breakpoints
	// shorter are neither read nor written. Default 0.
	MinTokens int64 `json:"min_tokens"`
}

// Default returns the default Config: sync and batch lookups reach their
// own cache, never the other one, and there is no minimum size.
func Default() Config { return Config{SyncHitRate: 1, BatchHitRate: 1} }

// Validate reports a rate outside [0, 1] or a negative minimum.
func (c Config) Validate() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"sync hit rate", c.SyncHitRate}, {"batch hit rate", c.BatchHitRate}, {"cross rate", c.CrossRate}} {
		if !(r.v >= 0 && r.v <= 1) {
			return fmt.Errorf("cache %s %v is not a probability from 0 to 1", r.name, r.v)
		}
	}
	if c.MinTokens < 0 {
		return fmt.Errorf("cache minimum %d tokens is negative", c.MinTokens)
	}
	return nil
}

// Reach returns the probabilities that a lookup on route reaches its own
// route's cache and the other route's.
func (c Config) Reach(route Route) (own, other float64) {
	if route == Batch {
		return c.BatchHitRate, c.CrossRate
	}
	return c.SyncHitRate, c.CrossRate
}

// TTL returns a breakpoint's time to live: its own, or 5 minutes (the
// API's default) when it has none.
func TTL(b llmfleet.Breakpoint) time.Duration {
	if b.TTL <= 0 {
		return 5 * time.Minute
	}
	return b.TTL
}

// Usage is the input side of a request's usage, as the API reports it.
type Usage struct {
	// Input is input_tokens: what lies past the last breakpoint written
	// or read, at least 1.
	Input int64
	// CacheRead is cache_read_input_tokens.
	CacheRead int64
	// Write5m and Write1h are cache_creation.ephemeral_5m_input_tokens
	// and ephemeral_1h_input_tokens (their sum is
	// cache_creation_input_tokens).
	Write5m, Write1h int64
}

// Writes returns cache_creation_input_tokens.
func (u Usage) Writes() int64 { return u.Write5m + u.Write1h }

// With returns the llmfleet.Usage of an answer of output tokens whose
// input side is u.
func (u Usage) With(output int64) llmfleet.Usage {
	out := llmfleet.Usage{InputTokens: u.Input, OutputTokens: output,
		CacheReadInputTokens: u.CacheRead, CacheCreationInputTokens: u.Writes()}
	out.CacheCreation.Ephemeral5mInputTokens = u.Write5m
	out.CacheCreation.Ephemeral1hInputTokens = u.Write1h
	return out
}

// Bill returns the input usage of prompt p when its first read tokens
// were read from the cache (0: a miss): the breakpoints past read (and at
// least minTokens long) are written, the tokens up to the last 1-hour one
// as 1-hour writes and the rest up to the last one as 5-minute writes;
// what lies past the last breakpoint written (or past read) is input, at
// least 1.
func Bill(p llmfleet.Prompt, read, minTokens int64) Usage {
	u := Usage{CacheRead: read}
	last, last1h := read, read
	for _, b := range p.Breakpoints {
		if b.Tokens <= read || b.Tokens < minTokens {
			continue
		}
		last = max(last, b.Tokens)
		if TTL(b) >= time.Hour {
			last1h = max(last1h, b.Tokens)
		}
	}
	u.Write1h = last1h - read
	u.Write5m = last - last1h
	u.Input = max(p.Tokens-last, 1)
	return u
}
