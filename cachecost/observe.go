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
	// Believed is what the Book knew of its cache entries when it was
	// routed (Request's answer then); nil entries are taken as none.
	Believed []Entry
	// Usage is the usage its answer reported.
	Usage llmfleet.Usage
}

// Observe learns from an answered request: the tokens of its prefixes and
// per byte, whether its lookup hit the entry believed live (a hit-rate
// observation), and which entries its lookup read or wrote, and when
// they expire. It returns what to persist: the observation (nil when
// none was believed live) and the prefix states it changed.
func (b *Book) Observe(l Lookup) (*llmfleet.CacheStat, []llmfleet.PrefixState) {
	u, bps := l.Usage, l.Prompt.Breakpoints
	read := u.CacheReadInputTokens
	cached := read + u.CacheCreationInputTokens
	total := cached + u.InputTokens
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	if l.Prompt.Bytes > 0 && total > 0 {
		b.learnPerByteLocked(l.Model, float64(total)/float64(l.Prompt.Bytes))
	}
	if u.OutputTokens > 0 {
		if old, ok := b.output[l.Model]; ok {
			b.output[l.Model] = old + (float64(u.OutputTokens)-old)/16
		} else {
			b.output[l.Model] = float64(u.OutputTokens)
		}
	}
	if len(bps) == 0 || cached == 0 {
		return nil, nil // nothing was cacheable (or the provider cached nothing)
	}
	b.tokens[bps[len(bps)-1].Hash] = cached
	readAt := -1
	if read > 0 {
		readAt = b.closestLocked(bps, read)
		b.tokens[bps[readAt].Hash] = read
	}
	stat := b.hitLocked(l, readAt)
	class := classOf(l.Route)
	changed := make([]llmfleet.PrefixState, 0, len(bps))
	for i, bp := range bps {
		if i < readAt || (i > readAt && u.CacheCreationInputTokens == 0) {
			continue
		}
		ttl := bp.TTL
		if l.TTL1h && i > readAt {
			ttl = time.Hour
		}
		k := prefixKey{l.Cred, bp.Hash}
		e := b.entries[k]
		until := l.At.Add(ttl)
		if class == llmfleet.RouteBatch {
			e.BatchUntil = later(e.BatchUntil, until)
		} else {
			e.SyncUntil = later(e.SyncUntil, until)
		}
		b.entries[k] = e
		changed = append(changed, llmfleet.PrefixState{CredentialID: l.Cred, Hash: bp.Hash, Tokens: b.tokens[bp.Hash],
			SyncUntil: e.SyncUntil, BatchUntil: e.BatchUntil, SeenAt: l.At})
	}
	b.pruneLocked(l.At)
	return stat, changed
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

// closestLocked returns the breakpoint whose size in tokens is closest
// to n, by what the Book knows of them.
func (b *Book) closestLocked(bps []llmfleet.Breakpoint, n int64) int {
	best, diff := len(bps)-1, int64(-1)
	for i, bp := range bps {
		t, ok := b.tokens[bp.Hash]
		if !ok {
			t = bp.Tokens
		}
		d := max(t-n, n-t)
		if diff < 0 || d < diff {
			best, diff = i, d
		}
	}
	return best
}

// hitLocked counts the lookup of l as a hit-rate observation: of the
// longest breakpoint believed live (in the lookup's own cache, or only
// in the other), hit if the prefix read reached it. nil when none was
// believed live.
func (b *Book) hitLocked(l Lookup, readAt int) *llmfleet.CacheStat {
	class := classOf(l.Route)
	for j := len(l.Believed) - 1; j >= 0 && j < len(l.Prompt.Breakpoints); j-- {
		syncCache, batchCache := l.Believed[j].alive(l.At)
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
