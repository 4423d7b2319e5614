package cachecost

import (
	"time"

	"github.com/llmfleet/llmfleet"
)

// Lookup is an answered request, as the Book learns from it.
type Lookup struct {
	Provider, Model, Cred string
	// Prompt is the request's prompt-cache structure.
	Prompt llmfleet.Prompt
	// Route is the route that answered (a rescue's sync call: sync).
	Route llmfleet.Route
	// TTL1h tells that its breakpoints' TTLs were upgraded to an hour.
	TTL1h bool
	// At is about when its prompt reached the provider's cache: the
	// answer's time for a sync call, within its batch's turnaround for a
	// batch item.
	At time.Time
	// Believed are the points of the request as the Book knew them when
	// it was routed (Request's answer then); nil: as it knows them now.
	Believed []Point
	// Usage is the usage its answer reported.
	Usage llmfleet.Usage
}

// Observe learns from an answered request: the tokens of its prefixes and
// per byte, whether its lookup hit the entry believed live (a hit-rate
// observation), and which entries its lookup read or wrote, and when
// they expire. It returns what to persist: the observation (nil when
// none was believed live) and the prefix states it changed.
func (b *Book) Observe(l Lookup) (*llmfleet.CacheStat, []llmfleet.PrefixState) {
	if l.Believed == nil {
		r, _ := b.Request(l.Model, l.Cred, l.Prompt, 0)
		l.Believed = r.Points
	}
	u := l.Usage
	read := u.CacheReadInputTokens
	cached := read + u.CacheCreationInputTokens
	total := cached + u.InputTokens
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	if l.Prompt.Bytes > 0 && total > 0 {
		b.learnPerByteLocked(l.Model, float64(total)/float64(l.Prompt.Bytes))
	}
	b.learnOutputLocked(l.Model, u.OutputTokens)
	b.use(l.Cred, l.Prompt.Conversation, l.Prompt, l.At)
	if c, ok := b.convs[prefixKey{l.Cred, l.Prompt.Conversation}]; ok && l.Prompt.Conversation != "" {
		c.answered = later(c.answered, l.At)
		b.convs[prefixKey{l.Cred, l.Prompt.Conversation}] = c
	}
	pts := l.Believed
	if len(pts) == 0 || cached == 0 {
		return nil, nil // nothing was cacheable (or the provider cached nothing)
	}
	b.tokens[pts[len(pts)-1].Hash] = cached
	readAt := -1
	if read > 0 {
		readAt = b.closestLocked(pts, read)
		b.tokens[pts[readAt].Hash] = read
	}
	stat := b.hitLocked(l, readAt)
	class := classOf(l.Route)
	changed := make([]llmfleet.PrefixState, 0, len(pts))
	for i, pt := range pts {
		written := i > readAt && pt.written() && u.CacheCreationInputTokens > 0
		if i != readAt && !written {
			continue
		}
		ttl := pt.TTL
		switch {
		case written && l.TTL1h:
			ttl = time.Hour
		case !written:
			ttl = b.entryTTL(pt)
		}
		k := prefixKey{l.Cred, pt.Hash}
		e := b.entries[k]
		until := l.At.Add(ttl)
		if class == llmfleet.RouteBatch {
			e.BatchUntil = later(e.BatchUntil, until)
		} else {
			e.SyncUntil = later(e.SyncUntil, until)
		}
		b.entries[k] = e
		changed = append(changed, llmfleet.PrefixState{CredentialID: l.Cred, Hash: pt.Hash, Tokens: b.tokens[pt.Hash],
			SyncUntil: e.SyncUntil, BatchUntil: e.BatchUntil, SeenAt: l.At})
	}
	b.pruneLocked(l.At)
	return stat, changed
}

// entryTTL returns the TTL a read refreshes a point's entry by: its
// breakpoint's, or for an earlier prefix (whose TTL this request does
// not say) five minutes, the shorter.
func (b *Book) entryTTL(pt Point) time.Duration {
	if pt.TTL > 0 {
		return pt.TTL
	}
	return 5 * time.Minute
}

// learnPerByteLocked moves a model's tokens per byte towards an
// observation (a moving average).
func (b *Book) learnPerByteLocked(model string, v float64) {
	old := b.perByte[model]
	if old == 0 {
		b.perByte[model] = v
		return
	}
	b.perByte[model] = old + (v-old)/16
}

// learnOutputLocked moves a model's expected output towards an
// observation.
func (b *Book) learnOutputLocked(model string, n int64) {
	if n <= 0 {
		return
	}
	if old, ok := b.output[model]; ok {
		b.output[model] = old + (float64(n)-old)/16
		return
	}
	b.output[model] = float64(n)
}

// closestLocked returns the point whose size in tokens is closest to n.
func (b *Book) closestLocked(pts []Point, n int64) int {
	best, diff := len(pts)-1, int64(-1)
	for i, pt := range pts {
		t, ok := b.tokens[pt.Hash]
		if !ok {
			t = pt.Tokens
		}
		d := max(t-n, n-t)
		if diff < 0 || d < diff {
			best, diff = i, d
		}
	}
	return best
}

// hitLocked counts the lookup of l as a hit-rate observation: of the
// longest point believed live (in the lookup's own cache, or only in the
// other), hit if the prefix read reached it. nil when none was believed
// live.
func (b *Book) hitLocked(l Lookup, readAt int) *llmfleet.CacheStat {
	class := classOf(l.Route)
	for j := len(l.Believed) - 1; j >= 0; j-- {
		if l.Believed[j].Presumed {
			continue // not known live: no observation of the rates
		}
		syncCache, batchCache := l.Believed[j].Cache.alive(l.At)
		if !syncCache && !batchCache {
			continue
		}
		own := syncCache
		if class == llmfleet.RouteBatch {
			own = batchCache
		}
		entry := class
		if !own {
			entry = other(class)
			if s := b.sharing[prefixKey{l.Cred, l.Believed[j].Hash}]; s != nil && s.convs > 1 {
				// Another conversation's turn may have written it to
				// this cache unknown: no observation of the cross rate.
				return nil
			}
		}
		k := statKey{l.Provider, l.Model, l.Cred, class, entry}
		c := b.stats[k]
		if c == nil {
			c = &counts{}
			b.stats[k] = c
		}
		hit := int64(0)
		if readAt >= j {
			hit = 1
		}
		c.lookups++
		c.hits += hit
		return &llmfleet.CacheStat{Provider: l.Provider, Model: l.Model, CredentialID: l.Cred, Lookup: class, Entry: entry,
			Lookups: 1, Hits: hit}
	}
	return nil
}

// other returns the other cache.
func other(class llmfleet.Route) llmfleet.Route {
	if class == llmfleet.RouteBatch {
		return llmfleet.RouteSync
	}
	return llmfleet.RouteBatch
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
