package storetest

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// stat returns a prompt-cache statistic of a provider, model and
// credential, by the cache looked up and the one holding the entry.
func stat(provider, model, cred string, lookup, entry llmfleet.Route, lookups, hits int64) llmfleet.CacheStat {
	return llmfleet.CacheStat{Provider: provider, Model: model, CredentialID: cred,
		Lookup: lookup, Entry: entry, Lookups: lookups, Hits: hits}
}

// statKeys are keys that differ in one field each, or whose strings a
// store joining them would confuse.
var statKeys = []llmfleet.CacheStat{
	stat("anthropic", "claude-sonnet-4-6", "cred_a", llmfleet.RouteSync, llmfleet.RouteSync, 0, 0),
	stat("anthropic", "claude-sonnet-4-6", "cred_a", llmfleet.RouteSync, llmfleet.RouteBatch, 0, 0),
	stat("anthropic", "claude-sonnet-4-6", "cred_a", llmfleet.RouteBatch, llmfleet.RouteSync, 0, 0),
	stat("anthropic", "claude-sonnet-4-6", "cred_a", llmfleet.RouteBatch, llmfleet.RouteBatch, 0, 0),
	stat("anthropic", "claude-sonnet-4-6", "cred_b", llmfleet.RouteSync, llmfleet.RouteSync, 0, 0),
	stat("anthropic", "claude-haiku-4-5", "cred_a", llmfleet.RouteSync, llmfleet.RouteSync, 0, 0),
	stat("anthropic-", "claude", "cred_a", llmfleet.RouteSync, llmfleet.RouteSync, 0, 0),
	stat("anthropic", "-claude", "cred_a", llmfleet.RouteSync, llmfleet.RouteSync, 0, 0),
	stat("openai", "gpt-5", "cred_o", llmfleet.RouteBatch, llmfleet.RouteSync, 0, 0),
}

// counted returns key k of statKeys with counts.
func counted(k int, lookups, hits int64) llmfleet.CacheStat {
	s := statKeys[k]
	s.Lookups, s.Hits = lookups, hits
	return s
}

func compareStats(a, b llmfleet.CacheStat) int {
	return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Model, b.Model),
		cmp.Compare(a.CredentialID, b.CredentialID), cmp.Compare(a.Lookup, b.Lookup), cmp.Compare(a.Entry, b.Entry))
}

// checkStats compares what CacheStats returns, in any order, with want.
func (s *suite) checkStats(t *testing.T, st llmfleet.Store, what string, want []llmfleet.CacheStat) {
	t.Helper()
	got, err := st.CacheStats(ctx(t))
	if err != nil {
		t.Fatalf("%s: CacheStats: %v", what, err)
	}
	got, want = slices.Clone(got), slices.Clone(want)
	slices.SortFunc(got, compareStats)
	slices.SortFunc(want, compareStats)
	if !slices.Equal(got, want) {
		t.Errorf("%s: CacheStats\n got %+v\nwant %+v", what, got, want)
	}
}

// prefix returns the state of prefix i under a credential, its times
// (base and i ns on) to the nanosecond in a zone other than UTC.
func prefix(cred string, i int, tokens int64) llmfleet.PrefixState {
	at := base.Add(time.Duration(i))
	return llmfleet.PrefixState{CredentialID: cred, Hash: fmt.Sprintf("sha256:%064x", i), Tokens: tokens,
		SyncUntil: at.Add(5 * time.Minute), BatchUntil: at.Add(time.Hour), SeenAt: at}
}

// checkPrefixes compares what Prefixes returns for hashes, in any order,
// with want, times with time.Time.Equal.
func (s *suite) checkPrefixes(t *testing.T, st llmfleet.Store, what, cred string, hashes []string, want ...llmfleet.PrefixState) {
	t.Helper()
	got, err := st.Prefixes(ctx(t), cred, hashes)
	if err != nil {
		t.Fatalf("%s: Prefixes: %v", what, err)
	}
	checkPrefixList(t, what, got, want)
}

func checkPrefixList(t *testing.T, what string, got, want []llmfleet.PrefixState) {
	t.Helper()
	byHash := func(a, b llmfleet.PrefixState) int { return cmp.Compare(a.Hash, b.Hash) }
	got, want = slices.Clone(got), slices.Clone(want)
	slices.SortFunc(got, byHash)
	slices.SortFunc(want, byHash)
	if len(got) != len(want) {
		t.Fatalf("%s: %d prefixes, want %d:\n got %+v\nwant %+v", what, len(got), len(want), got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.CredentialID != w.CredentialID || g.Hash != w.Hash || g.Tokens != w.Tokens ||
			!g.SyncUntil.Equal(w.SyncUntil) || !g.BatchUntil.Equal(w.BatchUntil) || !g.SeenAt.Equal(w.SeenAt) {
			t.Errorf("%s: prefix %d:\n got %+v\nwant %+v", what, i, g, w)
		}
	}
}

// cacheRoundTrip: statistics and prefixes come back field for field, the
// times to the nanosecond, zero ones zero; empty calls store nothing;
// Prefixes leaves out unknown hashes and other credentials' prefixes.
func (s *suite) cacheRoundTrip(t *testing.T) {
	st := s.store(t)
	c := ctx(t)
	s.checkStats(t, st, "empty store", nil)
	s.checkPrefixes(t, st, "empty store", "cred_a", []string{prefix("cred_a", 1, 0).Hash})
	if err := st.AddCacheStats(c, nil); err != nil {
		t.Errorf("AddCacheStats(nil): %v", err)
	}
	if err := st.PutPrefixes(c, nil); err != nil {
		t.Errorf("PutPrefixes(nil): %v", err)
	}
	var stats []llmfleet.CacheStat
	for k := range statKeys {
		stats = append(stats, counted(k, int64(10+k), int64(k)))
	}
	if err := st.AddCacheStats(c, stats); err != nil {
		t.Fatal(err)
	}
	s.checkStats(t, st, "after AddCacheStats", stats)

	full := prefix("cred_a", 1, 4096)
	bare := llmfleet.PrefixState{CredentialID: "cred_a", Hash: prefix("cred_a", 2, 0).Hash}
	synced := prefix("cred_a", 3, 0)
	synced.BatchUntil = time.Time{}
	other := prefix("cred_b", 1, 1024) // full's hash, another credential
	if err := st.PutPrefixes(c, []llmfleet.PrefixState{full, bare, synced, other}); err != nil {
		t.Fatal(err)
	}
	hashes := []string{full.Hash, bare.Hash, "sha256:unknown", synced.Hash, full.Hash}
	s.checkPrefixes(t, st, "cred_a", "cred_a", hashes, full, bare, synced)
	s.checkPrefixes(t, st, "cred_b", "cred_b", hashes, other)
	s.checkPrefixes(t, st, "unknown credential", "cred_c", hashes)
	s.checkPrefixes(t, st, "no hashes", "cred_a", nil)
}

// cacheStatsAddUp: counts of one key add up, within a call, across calls
// and across a Reopen; keys are never merged.
func (s *suite) cacheStatsAddUp(t *testing.T) {
	st := s.store(t)
	c := ctx(t)
	calls := [][]llmfleet.CacheStat{
		{counted(0, 3, 1), counted(1, 2, 2), counted(0, 4, 4)},
		{counted(2, 1, 0)},
		{counted(1, 5, 1), counted(0, 1, 0)},
	}
	for _, call := range calls {
		if err := st.AddCacheStats(c, call); err != nil {
			t.Fatal(err)
		}
	}
	want := []llmfleet.CacheStat{counted(0, 8, 5), counted(1, 7, 3), counted(2, 1, 0)}
	s.checkStats(t, st, "after three calls", want)
	if s.h.Reopen == nil {
		return
	}
	st = s.reopened(t, st)
	s.checkStats(t, st, "after a reopen", want)
	if err := st.AddCacheStats(c, []llmfleet.CacheStat{counted(2, 10, 9), counted(3, 1, 1)}); err != nil {
		t.Fatal(err)
	}
	st = s.reopened(t, st)
	s.checkStats(t, st, "after adding and a second reopen",
		[]llmfleet.CacheStat{counted(0, 8, 5), counted(1, 7, 3), counted(2, 11, 9), counted(3, 1, 1)})
}

// addStatsConcurrently has goroutines add, each in calls of its own, one
// lookup and hit to every key of statKeys, in orders of their own, on the
// stores given in turn; it returns the sums to expect.
func addStatsConcurrently(t *testing.T, sts []llmfleet.Store, goroutines, calls int) []llmfleet.CacheStat {
	t.Helper()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			st := sts[g%len(sts)]
			for i := range calls {
				call := make([]llmfleet.CacheStat, 0, len(statKeys))
				for k := range statKeys {
					call = append(call, counted((k+g+i)%len(statKeys), 1, 1))
				}
				if g%2 == 1 {
					slices.Reverse(call)
				}
				if err := st.AddCacheStats(ctx(t), call); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	want := make([]llmfleet.CacheStat, len(statKeys))
	for k := range statKeys {
		want[k] = counted(k, int64(goroutines*calls), int64(goroutines*calls))
	}
	return want
}

// cacheStatsConcurrent: concurrent AddCacheStats calls lose no count.
func (s *suite) cacheStatsConcurrent(t *testing.T) {
	st := s.store(t)
	want := addStatsConcurrently(t, []llmfleet.Store{st}, 8, 25)
	s.checkStats(t, st, "after concurrent calls", want)
}

// prefixesMerge: a later call keeps, of each time, the later of the
// stored and the given, a zero time never erasing a known one, and its
// Tokens replace the stored ones when above 0; several states of one
// prefix in a call are taken in order. What was put survives a Reopen.
func (s *suite) prefixesMerge(t *testing.T) {
	st := s.store(t)
	c := ctx(t)
	put := func(ps ...llmfleet.PrefixState) {
		t.Helper()
		if err := st.PutPrefixes(c, ps); err != nil {
			t.Fatal(err)
		}
	}
	p := prefix("cred_a", 1, 4096)
	put(p)
	// Only the sync expiry is later; the tokens are not known.
	update := llmfleet.PrefixState{CredentialID: p.CredentialID, Hash: p.Hash,
		SyncUntil: p.SyncUntil.Add(time.Nanosecond), BatchUntil: p.BatchUntil.Add(-time.Minute), SeenAt: p.SeenAt.Add(-time.Second)}
	put(update)
	want := p
	want.SyncUntil = update.SyncUntil
	s.checkPrefixes(t, st, "after a later sync expiry", "cred_a", []string{p.Hash}, want)
	// Zeros erase nothing; smaller tokens, learned later, replace.
	put(llmfleet.PrefixState{CredentialID: p.CredentialID, Hash: p.Hash, Tokens: 1024})
	want.Tokens = 1024
	s.checkPrefixes(t, st, "after zero times", "cred_a", []string{p.Hash}, want)
	// A prefix first put without times or tokens, then given them, in one
	// call with a second state whose times are earlier and tokens 0.
	q := prefix("cred_a", 2, 2048)
	bare := llmfleet.PrefixState{CredentialID: q.CredentialID, Hash: q.Hash}
	put(bare)
	s.checkPrefixes(t, st, "a bare prefix", "cred_a", []string{q.Hash}, bare)
	earlier := prefix("cred_a", 2, 0)
	earlier.SyncUntil, earlier.BatchUntil, earlier.SeenAt = base, base, base.Add(-time.Hour)
	put(q, earlier)
	s.checkPrefixes(t, st, "after two states in one call", "cred_a", []string{p.Hash, q.Hash}, want, q)
	if s.h.Reopen == nil {
		return
	}
	st = s.reopened(t, st)
	s.checkPrefixes(t, st, "after a reopen", "cred_a", []string{p.Hash, q.Hash}, want, q)
}

// prefixesMany: calls of thousands of prefixes and hashes, the unknown
// among them left out.
func (s *suite) prefixesMany(t *testing.T) {
	st := s.store(t)
	const n = 2500
	var ps []llmfleet.PrefixState
	for i := range n {
		ps = append(ps, prefix("cred_a", i, int64(i)))
	}
	if err := st.PutPrefixes(ctx(t), ps); err != nil {
		t.Fatal(err)
	}
	var hashes []string
	var want []llmfleet.PrefixState
	for i := n - 1; i >= 0; i -= 2 {
		hashes = append(hashes, ps[i].Hash, prefix("cred_a", n+i, 0).Hash)
		want = append(want, ps[i])
	}
	s.checkPrefixes(t, st, "half of the prefixes and as many unknown", "cred_a", hashes, want...)
}

// prefixesPurge: Purge deletes, counting them, the prefixes last seen
// before the results cut (and those put without SeenAt), whatever the
// ledger cut, and keeps the others.
func (s *suite) prefixesPurge(t *testing.T) {
	st := s.store(t)
	c := ctx(t)
	cut := base.Add(-7 * 24 * time.Hour)
	seen := func(i int, at time.Time) llmfleet.PrefixState {
		p := prefix("cred_a", i, 100)
		p.SeenAt = at
		return p
	}
	old, justBefore := seen(1, cut.Add(-30*24*time.Hour)), seen(2, cut.Add(-time.Nanosecond))
	unseen := seen(3, time.Time{})
	onCut, recent := seen(4, cut), seen(5, base)
	// Seen before the cut, then again after it.
	again := seen(6, cut.Add(-time.Hour))
	if err := st.PutPrefixes(c, []llmfleet.PrefixState{old, justBefore, unseen, onCut, recent, again}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutPrefixes(c, []llmfleet.PrefixState{{CredentialID: again.CredentialID, Hash: again.Hash, SeenAt: base}}); err != nil {
		t.Fatal(err)
	}
	again.SeenAt = base
	all := []string{old.Hash, justBefore.Hash, unseen.Hash, onCut.Hash, recent.Hash, again.Hash}
	// A ledger cut later than every prefix deletes none.
	n, err := st.Purge(c, cut.Add(-60*24*time.Hour), base.Add(time.Hour))
	if err != nil || n != 1 {
		t.Errorf("Purge before every seen prefix = %d, %v; want 1, the one never seen", n, err)
	}
	s.checkPrefixes(t, st, "after an early results cut", "cred_a", all, old, justBefore, onCut, recent, again)
	n, err = st.Purge(c, cut, cut.Add(-60*24*time.Hour))
	if err != nil || n != 2 {
		t.Errorf("Purge = %d, %v; want the 2 prefixes last seen before the results cut", n, err)
	}
	s.checkPrefixes(t, st, "after Purge", "cred_a", all, onCut, recent, again)
	if n, err := st.Purge(c, cut, cut); n != 0 || err != nil {
		t.Errorf("second Purge = %d, %v; want 0", n, err)
	}
}

// cacheCopies: changing what was passed to AddCacheStats or PutPrefixes,
// or what CacheStats or Prefixes returned, changes nothing stored.
func (s *suite) cacheCopies(t *testing.T) {
	st := s.store(t)
	c := ctx(t)
	stats := []llmfleet.CacheStat{counted(0, 2, 1), counted(1, 3, 3)}
	want := slices.Clone(stats)
	if err := st.AddCacheStats(c, stats); err != nil {
		t.Fatal(err)
	}
	stats[0].Lookups, stats[1].Provider = 99, "changed"
	s.checkStats(t, st, "after changing what was passed", want)
	got, err := st.CacheStats(c)
	if err != nil || len(got) != 2 {
		t.Fatalf("CacheStats = %v, %v", got, err)
	}
	got[0].Hits, got[1].Model = 99, "changed"
	s.checkStats(t, st, "after changing what was returned", want)

	ps := []llmfleet.PrefixState{prefix("cred_a", 1, 10), prefix("cred_a", 2, 20)}
	wantPs := slices.Clone(ps)
	hashes := []string{ps[0].Hash, ps[1].Hash}
	if err := st.PutPrefixes(c, ps); err != nil {
		t.Fatal(err)
	}
	ps[0].Tokens, ps[1].SeenAt = 99, base.Add(time.Hour)
	s.checkPrefixes(t, st, "after changing what was passed", "cred_a", hashes, wantPs...)
	gotPs, err := st.Prefixes(c, "cred_a", hashes)
	if err != nil || len(gotPs) != 2 {
		t.Fatalf("Prefixes = %v, %v", gotPs, err)
	}
	gotPs[0].Tokens, gotPs[1].SyncUntil = 99, base.Add(time.Hour)
	hashes[0] = "changed"
	s.checkPrefixes(t, st, "after changing what was returned", "cred_a", []string{wantPs[0].Hash, wantPs[1].Hash}, wantPs...)
}

// prefixesConcurrent: concurrent PutPrefixes calls over the same
// prefixes, in orders of their own, all succeed, and each time kept is
// the latest given.
func (s *suite) prefixesConcurrent(t *testing.T) {
	st := s.store(t)
	const goroutines, calls, n = 6, 10, 20
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				ps := make([]llmfleet.PrefixState, n)
				for k := range ps {
					ps[k] = prefix("cred_a", k, 100)
					ps[k].SeenAt = ps[k].SeenAt.Add(time.Duration(g*calls+i) * time.Second)
				}
				if g%2 == 1 {
					slices.Reverse(ps)
				}
				if err := st.PutPrefixes(ctx(t), ps); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	var hashes []string
	var want []llmfleet.PrefixState
	for k := range n {
		p := prefix("cred_a", k, 100)
		p.SeenAt = p.SeenAt.Add((goroutines*calls - 1) * time.Second)
		hashes, want = append(hashes, p.Hash), append(want, p)
	}
	s.checkPrefixes(t, st, "after concurrent calls", "cred_a", hashes, want...)
}
