package ledger

import (
	"maps"

	"github.com/llmfleet/llmfleet"
)

// Cacheable returns the tokens of the prompt up to its last cache
// breakpoint: those the provider read from its prompt cache or wrote to
// it. Input, the tokens after the last breakpoint, is not cacheable.
func (t Tokens) Cacheable() int64 {
	return t.CacheRead + t.CacheWrite5m + t.CacheWrite1h
}

// CacheHitRate returns the share of the cacheable tokens (Cacheable) that
// were read from the prompt cache rather than written to it: CacheRead /
// (CacheRead + CacheWrite5m + CacheWrite1h), from 0 to 1. It is 0 when no
// token was cacheable (no prompt had a cache breakpoint), so that a route
// or model that used no cache does not read as one that always missed or
// always hit: tell them apart by Cacheable.
func (t Tokens) CacheHitRate() float64 {
	n := t.Cacheable()
	if n <= 0 {
		return 0
	}
	return float64(t.CacheRead) / float64(n)
}

// MissNotInSaving returns the part of an entry's routing miss
// (LedgerEntry.MissUSD: the cache writes its route caused, of a prefix
// the other route's cache held) that its saving (SyncEquivalent less
// CostUSD) does not count already, so that the net saving is the saving
// less it:
//
//   - an entry paid at the standard price (sync, or flex served
//     standard) saved nothing by its own figures: what it would have
//     paid is what it paid, misses included, while with every request
//     sync its prefix would have been warm in the sync cache. Its whole
//     MissUSD is returned;
//   - a discounted entry (flex, batch) is not: its would-have-paid is
//     the sync route's bill with the sync cache's own state
//     (LedgerEntry.SyncUSD, priced by Make), so its saving already sets
//     what it paid, its misses included, against what sync would have
//     paid, reads of the prefix sync held included;
//   - a late rescue answer (RescueLate) is not either: its whole cost is
//     already counted as lost (its SyncEquivalent is 0);
//   - an unpriced entry is in no saving: 0.
func MissNotInSaving(e llmfleet.LedgerEntry) float64 {
	if !e.Priced || e.Discounted() || e.Rescue == llmfleet.RescueLate {
		return 0
	}
	return e.MissUSD
}

// NetSaving returns what an entry saved net of the routing misses that
// its saving does not count (MissNotInSaving): SyncEquivalent less
// CostUSD less those; 0 for an unpriced entry. It is negative for a sync
// entry that paid for a routing miss, and for a late rescue answer.
// Summary.NetSavedUSD is the sum of NetSaving over the entries.
func NetSaving(e llmfleet.LedgerEntry) float64 {
	if !e.Priced {
		return 0
	}
	return SyncEquivalent(e) - e.CostUSD - MissNotInSaving(e)
}

// addCache counts the cache-related figures of an entry in a summary:
// its routing miss, its rewrite, whether its usage is estimated, and its
// breakdown by route and model.
func (s *Summary) addCache(e llmfleet.LedgerEntry, route string, tok Tokens) {
	s.RoutingMissUSD += e.MissUSD
	s.missNotInSaving += MissNotInSaving(e)
	if e.Rewrite != "" {
		s.Rewrites[e.Rewrite]++
	}
	if e.Estimated {
		s.Estimated++
	}
	byModel := s.ByRouteModel[route]
	if byModel == nil {
		byModel = map[string]Breakdown{}
		s.ByRouteModel[route] = byModel
	}
	addTo(byModel, e.Model, e, tok)
}

// cloneByRouteModel returns a copy of m that shares no memory with it.
func cloneByRouteModel(m map[string]map[string]Breakdown) map[string]map[string]Breakdown {
	if m == nil {
		return nil
	}
	out := make(map[string]map[string]Breakdown, len(m))
	for route, byModel := range m {
		out[route] = maps.Clone(byModel)
	}
	return out
}
