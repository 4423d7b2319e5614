package cachecost

import (
	"sync"
	"time"

	"github.com/llmfleet/llmfleet"
)

// Book is what the engine learns of prompt caching, for the cost model:
// the size of each prompt prefix in tokens (and, per model, the tokens a
// byte of prompt makes, for prefixes not seen yet), until when each cache
// holds each prefix under each credential, the hit rates of each
// provider, model and credential's lookups, and the cache each
// conversation's last turn used. It learns from the usage of the answers
// (Observe) and from what other replicas stored (Load, Merge); it reads
// no clock (times are passed in) and does no I/O: the engine persists
// what Observe returns. Its methods are safe for concurrent use.
type Book struct {
	// Priors are the hit rates before any is learned; the zero value
	// means Priors.
	Priors Rates
	// Weight is how many lookups the priors count as; 0 means 4.
	Weight float64

	mu       sync.Mutex
	tokens   map[string]int64           // by prefix hash
	perByte  map[string]float64         // tokens per byte, by model
	entries  map[prefixKey]Entry        // by credential and prefix hash
	stats    map[statKey]*counts        // hit counts
	convs    map[prefixKey]conversation // by credential and conversation
	output   map[string]float64         // average output tokens, by model
	sharing  map[prefixKey]*sharing     // who uses each prefix, by credential and hash
	think    map[string][]time.Duration // recent times from a turn's answer to the next turn, by credential
	tried    map[statKey]int64          // turns batched to measure the batch cache's rate
	observed int                        // observations since the last prune
}

type prefixKey struct{ cred, hash string }

type statKey struct {
	provider, model, cred string
	lookup, entry         llmfleet.Route
}

type counts struct{ lookups, hits int64 }

type conversation struct {
	class    llmfleet.Route
	at       time.Time // when its last turn was routed
	answered time.Time // when its last turn was answered (zero: not yet)
}

// defaultPerByte is the tokens a byte of prompt JSON is taken to make
// before a model's usage says otherwise.
const defaultPerByte = 0.25

// conversationTTL is how long a conversation's last route is kept
// without a turn.
const conversationTTL = 2 * time.Hour

func (b *Book) init() {
	if b.tokens == nil {
		b.tokens, b.perByte = map[string]int64{}, map[string]float64{}
		b.entries, b.stats = map[prefixKey]Entry{}, map[statKey]*counts{}
		b.convs, b.output = map[prefixKey]conversation{}, map[string]float64{}
		b.sharing, b.think = map[prefixKey]*sharing{}, map[string][]time.Duration{}
		b.tried = map[statKey]int64{}
	}
}

// defaultOutput is the output, in tokens, expected of a model's request
// before any was seen.
const defaultOutput = 500

// Output returns the output tokens expected of a request of model: a
// moving average of those seen.
func (b *Book) Output(model string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	if v, ok := b.output[model]; ok {
		return int64(v)
	}
	return defaultOutput
}

// Rates returns the hit rates learned for a provider, model and
// credential: each a smoothed share of the lookups that hit. A rate's
// prior is what the provider's lookups of that kind show over its other
// models and credentials (their caches behave alike), itself smoothed
// towards the Priors; each prior counts as Weight lookups.
func (b *Book) Rates(provider, model, cred string) Rates {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	pr := b.priors()
	w := b.weight()
	rate := func(lookup, entry llmfleet.Route, prior float64) float64 {
		var all counts // the provider's other models' and credentials'
		for k, c := range b.stats {
			if k.provider == provider && k.lookup == lookup && k.entry == entry && (k.model != model || k.cred != cred) {
				all.lookups += c.lookups
				all.hits += c.hits
			}
		}
		pooled := (float64(all.hits) + prior*w) / (float64(all.lookups) + w)
		c := b.stats[statKey{provider, model, cred, lookup, entry}]
		if c == nil {
			return pooled
		}
		return (float64(c.hits) + pooled*w) / (float64(c.lookups) + w)
	}
	sync := llmfleet.RouteSync
	batch := llmfleet.RouteBatch
	return Rates{
		Sync:  rate(sync, sync, pr.Sync),
		Batch: rate(batch, batch, pr.Batch),
		// The cross rate pools both directions.
		Cross: (rate(sync, batch, pr.Cross) + rate(batch, sync, pr.Cross)) / 2,
	}
}

func (b *Book) priors() Rates {
	if b.Priors == (Rates{}) {
		return Priors
	}
	return b.Priors
}

func (b *Book) weight() float64 {
	if b.Weight <= 0 {
		return 4
	}
	return b.Weight
}

// Measuring reports whether the batch cache's rate of a provider, model
// and credential is still to be measured: fewer than trials lookups of
// batch-written entries by batch items counted, and fewer than trials
// turns batched for the sake of it (Tried) by this process.
func (b *Book) Measuring(provider, model, cred string, trials int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	k := statKey{provider, model, cred, llmfleet.RouteBatch, llmfleet.RouteBatch}
	if c := b.stats[k]; c != nil && c.lookups >= trials {
		return false
	}
	return b.tried[k] < trials
}

// Tried counts a turn batched to measure the batch cache's rate.
func (b *Book) Tried(provider, model, cred string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	b.tried[statKey{provider, model, cred, llmfleet.RouteBatch, llmfleet.RouteBatch}]++
}

// Request returns the cost model's form of a request of model whose
// prompt is p and expected output out, under credential cred: its
// breakpoints, and the earlier prefixes they look back to that are known
// cached under cred, with their tokens (learned, else their bytes at the
// model's tokens per byte) and what is known of their cache entries.
// missing lists the prefix hashes the Book knows nothing of (to read from
// the store).
func (b *Book) Request(model, cred string, p llmfleet.Prompt, out int64) (r Request, missing []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	perByte := b.perByte[model]
	if perByte == 0 {
		perByte = defaultPerByte
	}
	r = Request{Tokens: p.Tokens, Output: out, Points: make([]Point, 0, len(p.Breakpoints))}
	if p.Bytes > 0 && b.perByte[model] > 0 {
		r.Tokens = int64(float64(p.Bytes) * perByte)
	}
	size := func(hash string, bytes, est int64) (int64, bool) {
		if n, ok := b.tokens[hash]; ok {
			return n, true
		}
		if n := int64(float64(bytes) * perByte); n > 0 {
			return n, false
		}
		return est, false
	}
	seen := map[string]bool{}
	for _, bp := range p.Breakpoints {
		for i := len(bp.Earlier) - 1; i >= 0; i-- { // oldest first
			e := bp.Earlier[i]
			entry, cached := b.entries[prefixKey{cred, e.Hash}]
			if !cached || seen[e.Hash] {
				if _, known := b.tokens[e.Hash]; !cached && !known && !seen[e.Hash] {
					missing = append(missing, e.Hash)
					seen[e.Hash] = true
				}
				continue
			}
			seen[e.Hash] = true
			n, _ := size(e.Hash, e.Bytes, 0)
			r.Points = append(r.Points, Point{Hash: e.Hash, Tokens: n, Cache: entry})
		}
		n, known := size(bp.Hash, bp.Bytes, bp.Tokens)
		entry, cached := b.entries[prefixKey{cred, bp.Hash}]
		if !known && !cached {
			missing = append(missing, bp.Hash)
		}
		seen[bp.Hash] = true
		r.Points = append(r.Points, Point{Hash: bp.Hash, Tokens: n, TTL: bp.TTL, Cache: entry})
	}
	if n := len(r.Points); n > 0 && r.Tokens < r.Points[n-1].Tokens {
		r.Tokens = r.Points[n-1].Tokens
	}
	return r, missing
}

// Current returns the cache (RouteSync or RouteBatch) the last turn of a
// conversation used, if it was routed within conversationTTL of now.
func (b *Book) Current(cred, conv string, now time.Time) llmfleet.Route {
	if conv == "" {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	c, ok := b.convs[prefixKey{cred, conv}]
	if !ok || now.Sub(c.at) > conversationTTL {
		return ""
	}
	return c.class
}

// Routed records the route a conversation's turn took at now.
func (b *Book) Routed(cred, conv string, route llmfleet.Route, now time.Time) {
	if conv == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	k := prefixKey{cred, conv}
	if c, ok := b.convs[k]; ok && !c.answered.IsZero() && now.After(c.answered) {
		th := append(b.think[cred], now.Sub(c.answered))
		if len(th) > thinkSamples {
			th = th[len(th)-thinkSamples:]
		}
		b.think[cred] = th
	}
	b.convs[k] = conversation{class: classOf(route), at: now}
	b.pruneLocked(now)
}

// thinkSamples is how many think times are kept per credential.
const thinkSamples = 256

// defaultThink is the think time assumed before any is seen.
const defaultThink = time.Minute

// Think returns the recent times from a turn's answer to its
// conversation's next turn under a credential (defaultThink alone before
// any is seen).
func (b *Book) Think(cred string) []time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	if th := b.think[cred]; len(th) > 0 {
		return append([]time.Duration(nil), th...)
	}
	return []time.Duration{defaultThink}
}

// Merge takes in what the store holds of prefixes (another replica's
// observations, or an earlier run's): a token count replaces the Book's,
// an expiry is kept if later.
func (b *Book) Merge(prefixes []llmfleet.PrefixState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	for _, p := range prefixes {
		if p.Tokens > 0 {
			b.tokens[p.Hash] = p.Tokens
		}
		k := prefixKey{p.CredentialID, p.Hash}
		e := b.entries[k]
		if p.SyncUntil.After(e.SyncUntil) {
			e.SyncUntil = p.SyncUntil
		}
		if p.BatchUntil.After(e.BatchUntil) {
			e.BatchUntil = p.BatchUntil
		}
		if !e.SyncUntil.IsZero() || !e.BatchUntil.IsZero() {
			b.entries[k] = e
		}
	}
}

// Load replaces the Book's hit counts with stats (the store's sums).
func (b *Book) Load(stats []llmfleet.CacheStat) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	b.stats = make(map[statKey]*counts, len(stats))
	for _, s := range stats {
		b.stats[statKey{s.Provider, s.Model, s.CredentialID, s.Lookup, s.Entry}] = &counts{lookups: s.Lookups, hits: s.Hits}
	}
}

// pruneLocked drops, now and then, what has expired: entries past both
// expiries and conversations without a turn for conversationTTL.
func (b *Book) pruneLocked(now time.Time) {
	b.observed++
	if b.observed%1024 != 0 {
		return
	}
	for k, e := range b.entries {
		if !e.SyncUntil.After(now) && !e.BatchUntil.After(now) {
			delete(b.entries, k)
		}
	}
	for k, c := range b.convs {
		if now.Sub(c.at) > conversationTTL {
			delete(b.convs, k)
		}
	}
}

// sharing is what the Book knows of the conversations that use a prefix:
// how many in turn (a count of changes of conversation), the last, and
// when it was last used.
type sharing struct {
	conv  string
	convs int
	at    time.Time
}

// sharedTTL bounds how long a prefix counts as shared after it was last
// used.
const sharedTTL = time.Hour

// use records that conversation conv's request used the prompt p at at.
func (b *Book) use(cred, conv string, p llmfleet.Prompt, at time.Time) {
	if conv == "" {
		return
	}
	for _, bp := range p.Breakpoints {
		k := prefixKey{cred, bp.Hash}
		s := b.sharing[k]
		if s == nil {
			b.sharing[k] = &sharing{conv: conv, convs: 1, at: at}
			continue
		}
		if s.conv != conv {
			s.conv, s.convs = conv, s.convs+1
		}
		s.at = later(s.at, at)
	}
}

// Presume returns r, a request under cred as Request returned it, as the
// batch route sees it at now: a prefix that other conversations share (a
// harness's system prompt), used within its TTL, and that the batch cache
// is not known to hold, is presumed held there, as the batch turns of
// the conversations sharing it keep it. Without it, a fleet whose
// short-budget turns keep the sync cache warm would never batch a turn:
// the first would write the shared prefix again, at half price, for all
// the others to read. Presumed points are marked, and never count as a
// lookup of a live entry (Observe).
func (b *Book) Presume(r Request, cred string, now time.Time) Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.init()
	out := r
	out.Points = append([]Point(nil), r.Points...)
	for i, pt := range out.Points {
		s := b.sharing[prefixKey{cred, pt.Hash}]
		ttl := max(pt.TTL, 5*time.Minute)
		if s == nil || s.convs < 2 || now.Sub(s.at) > min(ttl, sharedTTL) || pt.Cache.BatchUntil.After(now) {
			continue
		}
		out.Points[i].Cache.BatchUntil = now.Add(ttl)
		out.Points[i].Presumed = true
	}
	return out
}
