package dispatch

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// cacheLog writes what the cost model's Book learns (hit counts, prefix
// states) to the store in the background, many at a time: what arrives
// while a write is under way goes in the next. A write that fails is
// kept and tried again after a back-off until the store takes it or the
// dispatcher closes. Without a store it keeps nothing.
type cacheLog struct {
	store llmfleet.Store
	run   func(func())             // starts a goroutine of the dispatcher's
	sleep func(time.Duration) bool // waits; false once the dispatcher closes
	log   *slog.Logger

	mu       sync.Mutex
	stats    []llmfleet.CacheStat
	prefixes []llmfleet.PrefixState
	writing  bool
}

// add queues what one answer taught the Book.
func (c *cacheLog) add(stat *llmfleet.CacheStat, prefixes []llmfleet.PrefixState) {
	if c.store == nil || (stat == nil && len(prefixes) == 0) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if stat != nil {
		c.stats = append(c.stats, *stat)
	}
	c.prefixes = append(c.prefixes, prefixes...)
	if !c.writing {
		c.writing = true
		c.run(c.flush)
	}
}

// flush writes what is queued until nothing is.
func (c *cacheLog) flush() {
	for n := 0; ; {
		c.mu.Lock()
		stats, prefixes := c.stats, c.prefixes
		c.stats, c.prefixes = nil, nil
		if len(stats)+len(prefixes) == 0 {
			c.writing = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if statsDone, err := c.write(stats, prefixes); err != nil {
			c.log.Warn("prompt-cache statistics not stored; will retry", "err", err)
			if statsDone {
				stats = nil
			}
			c.mu.Lock()
			c.stats, c.prefixes = append(stats, c.stats...), append(prefixes, c.prefixes...)
			c.mu.Unlock()
			if !c.sleep(min(time.Second<<min(n, 5), 30*time.Second)) {
				return
			}
			n++
			continue
		}
		n = 0
	}
}

// write stores stats, then prefixes; statsDone tells whether the stats
// went in when it fails.
func (c *cacheLog) write(stats []llmfleet.CacheStat, prefixes []llmfleet.PrefixState) (statsDone bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if len(stats) > 0 {
		if err := c.store.AddCacheStats(ctx, stats); err != nil {
			return false, err
		}
	}
	if len(prefixes) > 0 {
		if err := c.store.PutPrefixes(ctx, prefixes); err != nil {
			return true, err
		}
	}
	return true, nil
}
