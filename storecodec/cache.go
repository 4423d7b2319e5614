package storecodec

import (
	"cmp"
	"slices"
	"time"

	"github.com/llmfleet/llmfleet"
)

// cacheKey is what a prompt-cache statistic is counted by: the CacheStat
// without its counts.
type cacheKey struct {
	Provider, Model, CredentialID string
	Lookup, Entry                 llmfleet.Route
}

// keyOf returns the key a statistic is counted by.
func keyOf(s llmfleet.CacheStat) cacheKey {
	return cacheKey{s.Provider, s.Model, s.CredentialID, s.Lookup, s.Entry}
}

// compareKeys orders keys field by field, each in byte order.
func compareKeys(a, b cacheKey) int {
	return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Model, b.Model),
		cmp.Compare(a.CredentialID, b.CredentialID), cmp.Compare(a.Lookup, b.Lookup), cmp.Compare(a.Entry, b.Entry))
}

// MergeCacheStats adds up the statistics of one key, so that a store
// writes each key once per call (one SQL statement may not update a row
// twice), and returns them in key order: concurrent writers then lock
// the rows of their keys in one order, and do not deadlock.
func MergeCacheStats(stats []llmfleet.CacheStat) []llmfleet.CacheStat {
	at := make(map[cacheKey]int, len(stats))
	out := make([]llmfleet.CacheStat, 0, len(stats))
	for _, s := range stats {
		k := keyOf(s)
		if i, ok := at[k]; ok {
			out[i].Lookups += s.Lookups
			out[i].Hits += s.Hits
			continue
		}
		at[k] = len(out)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b llmfleet.CacheStat) int { return compareKeys(keyOf(a), keyOf(b)) })
	return out
}

// MergePrefixes folds the states of one credential and hash into one, as
// PutPrefixes would store them one after the other (MergePrefix), and
// returns one per credential and hash, in that order (for the reasons of
// MergeCacheStats). A Tokens below 0 is taken as 0, not known.
func MergePrefixes(prefixes []llmfleet.PrefixState) []llmfleet.PrefixState {
	type key struct{ cred, hash string }
	at := make(map[key]int, len(prefixes))
	out := make([]llmfleet.PrefixState, 0, len(prefixes))
	for _, p := range prefixes {
		p.Tokens = max(p.Tokens, 0)
		k := key{p.CredentialID, p.Hash}
		if i, ok := at[k]; ok {
			out[i] = MergePrefix(out[i], p)
			continue
		}
		at[k] = len(out)
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b llmfleet.PrefixState) int {
		return cmp.Or(cmp.Compare(a.CredentialID, b.CredentialID), cmp.Compare(a.Hash, b.Hash))
	})
	return out
}

// MergePrefix returns what is known of a prefix once given is put over
// stored: given's Tokens if above 0, else stored's; of each time, the
// later one, a zero time (not known) never replacing a known one.
func MergePrefix(stored, given llmfleet.PrefixState) llmfleet.PrefixState {
	if given.Tokens > 0 {
		stored.Tokens = given.Tokens
	}
	stored.SyncUntil = Later(stored.SyncUntil, given.SyncUntil)
	stored.BatchUntil = Later(stored.BatchUntil, given.BatchUntil)
	stored.SeenAt = Later(stored.SeenAt, given.SeenAt)
	return stored
}

// Later returns the later of two times, where the zero time is not
// known: either when the other is zero.
func Later(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || !b.After(a):
		return a
	}
	return b
}
