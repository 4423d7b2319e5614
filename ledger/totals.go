package ledger

import (
	"cmp"
	"slices"
	"sync"

	"github.com/llmfleet/llmfleet"
)

// Totals aggregates ledger entries as they come, so that the stats can be
// served without reading the store again. The zero value is ready to use;
// it is safe for concurrent use.
type Totals struct {
	// RecentMisses is how many recent budget misses to keep; 0 means
	// DefaultRecentMisses. Set it before the first Add.
	RecentMisses int

	mu     sync.Mutex
	s      Summary
	misses []llmfleet.LedgerEntry // oldest first, up to twice the limit
}

// Add counts entries.
func (t *Totals) Add(entries ...llmfleet.LedgerEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range entries {
		t.add(e)
	}
}

func (t *Totals) add(e llmfleet.LedgerEntry) {
	s := &t.s
	if s.ByModel == nil {
		s.ByModel = map[string]Breakdown{}
		s.ByRoute = map[string]Breakdown{}
		s.ByProvider = map[string]Breakdown{}
		s.ByTier = map[string]Breakdown{}
		s.ByClient = map[string]Breakdown{}
		s.ByRouteModel = map[string]map[string]Breakdown{}
		s.Rewrites = map[string]int64{}
	}
	route := e.Route
	if route == "" {
		route = llmfleet.RouteSync
		e.Route = route
	}
	switch {
	case e.Rescue == llmfleet.RescueLate:
		if e.Priced {
			s.LateUSD += e.CostUSD
		}
	case route == llmfleet.RouteBatch:
		s.BatchedCalls++
	case route == llmfleet.RouteFlex:
		s.FlexCalls++
	default:
		s.SyncCalls++
	}
	if e.Rescue == llmfleet.RescueSync {
		s.Rescued++
	}
	if e.Outcome != "ok" {
		s.Errors++
	}
	tok := TokensOf(e.Usage)
	s.Tokens.add(tok)
	if e.Priced {
		s.CostUSD += e.CostUSD
		s.SyncEquivalentUSD += SyncEquivalent(e)
	} else {
		s.UnpricedRequests++
		s.UnpricedTokens.add(tok)
	}
	addTo(s.ByModel, e.Model, e, tok)
	addTo(s.ByRoute, string(route), e, tok)
	addTo(s.ByProvider, providerOf(e), e, tok)
	addTo(s.ByTier, string(e.PricedTier()), e, tok)
	addTo(s.ByClient, ClientOf(e), e, tok)
	s.addCache(e, string(route), tok)
	if IsBudgetMiss(e) {
		s.BudgetMisses++
		t.misses = append(t.misses, e)
		if n := t.limit(); len(t.misses) > 2*n {
			t.misses = latest(t.misses, n)
		}
	}
}

func (t *Totals) limit() int {
	if t.RecentMisses > 0 {
		return t.RecentMisses
	}
	return DefaultRecentMisses
}

// latest returns the n latest entries by Time, oldest first, in a new
// slice.
func latest(es []llmfleet.LedgerEntry, n int) []llmfleet.LedgerEntry {
	es = slices.Clone(es)
	slices.SortStableFunc(es, func(a, b llmfleet.LedgerEntry) int { return a.Time.Compare(b.Time) })
	if len(es) > n {
		es = es[len(es)-n:]
	}
	return es
}

// Summary returns the aggregate of the entries added so far, its dollar
// figures rounded to the nano-dollar (RoundUSD). The caller sets
// BatchesSubmitted.
func (t *Totals) Summary() Summary {
	t.mu.Lock()
	s := t.s.clone()
	misses := latest(t.misses, t.limit())
	t.mu.Unlock()
	if s.ByModel == nil {
		s.ByModel = map[string]Breakdown{}
		s.ByRoute = map[string]Breakdown{}
	}
	if s.ByClient == nil {
		s.ByClient = map[string]Breakdown{}
	}
	if s.ByRouteModel == nil {
		s.ByRouteModel = map[string]map[string]Breakdown{}
	}
	if s.Rewrites == nil {
		s.Rewrites = map[string]int64{}
	}
	s.SavedUSD = s.SyncEquivalentUSD - s.CostUSD
	s.NetSavedUSD = s.SavedUSD - s.missNotInSaving
	s.CacheHitRate = s.Tokens.CacheHitRate()
	if s.SyncEquivalentUSD > 0 {
		s.SavedPercent = 100 * s.SavedUSD / s.SyncEquivalentUSD
	}
	slices.Reverse(misses)
	if misses == nil {
		misses = []llmfleet.LedgerEntry{}
	}
	s.RecentBudgetMisses = misses
	s.roundUSD()
	return s
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare[string])
	return keys
}

// providerOf returns the ByProvider key of an entry: its provider, or
// NoClient's "(none)" when it names none.
func providerOf(e llmfleet.LedgerEntry) string {
	if e.Provider == "" {
		return NoClient
	}
	return e.Provider
}

// addTo counts e in the breakdown m[key].
func addTo(m map[string]Breakdown, key string, e llmfleet.LedgerEntry, tok Tokens) {
	b := m[key]
	b.add(e, tok)
	m[key] = b
}

// Clone returns a copy of t, which counts on apart from it.
func (t *Totals) Clone() *Totals {
	t.mu.Lock()
	defer t.mu.Unlock()
	return &Totals{RecentMisses: t.RecentMisses, s: t.s.clone(), misses: slices.Clone(t.misses)}
}
