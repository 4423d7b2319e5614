package storetest

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

// clientSpend: a store that keeps spend (llmfleet.SpendStore) sums the
// cost of the ledger entries naming a client by their UTC day, whether
// added by AddLedger or with a result by CompleteRequests, concurrent
// adds included; entries without a client or cost count nowhere; the
// period is whole UTC days; Purge drops the days before the ledger's
// cutoff; and the sums survive a Reopen.
func (s *suite) clientSpend(t *testing.T) {
	st := s.store(t)
	if _, ok := st.(llmfleet.SpendStore); !ok {
		t.Skip("the store keeps no spend (llmfleet.SpendStore)")
	}
	day := llmfleet.UTCDay(base)
	late := day.Add(24*time.Hour - time.Nanosecond) // the last nanosecond of base's UTC day
	spend := func(client string, at time.Time, usd float64) llmfleet.LedgerEntry {
		e := entry(1, at)
		e.Client, e.CostUSD = client, usd
		return e
	}
	add := []llmfleet.LedgerEntry{
		spend("alice", base, 1.25), spend("alice", late, 0.5), spend("alice", late.Add(time.Nanosecond), 2),
		spend("bob", day.Add(-time.Nanosecond), 3), spend("", base, 7), spend("carol", base, 0),
	}
	if err := st.AddLedger(ctx(t), add); err != nil {
		t.Fatalf("AddLedger: %v", err)
	}
	s.add(t, st, request(4))
	e := ledgerEntry(4, "ok")
	e.Client, e.CostUSD = "alice", 0.25
	if _, err := st.CompleteRequests(ctx(t), []llmfleet.Completion{completion(4, result(4), e)}); err != nil {
		t.Fatalf("CompleteRequests: %v", err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := st.AddLedger(ctx(t), []llmfleet.LedgerEntry{spend("bob", base, 0.125), spend("alice", base, 0.0625)}); err != nil {
				t.Errorf("AddLedger %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if s.h.Reopen != nil {
		st = s.reopened(t, st)
	}
	// base's day only, from and to given within their days.
	checkSpend(t, st, base, base.Add(time.Hour), []llmfleet.ClientSpend{
		{Client: "alice", Day: day, USD: 1.25 + 0.5 + 0.25 + 8*0.0625},
		{Client: "bob", Day: day, USD: 8 * 0.125},
	})
	checkSpend(t, st, day.Add(-24*time.Hour), day.Add(48*time.Hour), []llmfleet.ClientSpend{
		{Client: "alice", Day: day, USD: 1.25 + 0.5 + 0.25 + 8*0.0625},
		{Client: "alice", Day: day.Add(24 * time.Hour), USD: 2},
		{Client: "bob", Day: day.Add(-24 * time.Hour), USD: 3},
		{Client: "bob", Day: day, USD: 8 * 0.125},
	})
	if _, err := st.Purge(ctx(t), day.Add(-48*time.Hour), day.Add(time.Hour)); err != nil {
		t.Fatalf("Purge: %v", err)
	}
	checkSpend(t, st, day.Add(-24*time.Hour), day.Add(24*time.Hour), []llmfleet.ClientSpend{
		{Client: "alice", Day: day, USD: 1.25 + 0.5 + 0.25 + 8*0.0625},
		{Client: "bob", Day: day, USD: 8 * 0.125},
	})
}

// checkSpend checks what st's ClientSpend returns for [from, to).
func checkSpend(t *testing.T, st llmfleet.Store, from, to time.Time, want []llmfleet.ClientSpend) {
	t.Helper()
	got, err := st.(llmfleet.SpendStore).ClientSpend(ctx(t), from, to)
	if err != nil {
		t.Fatalf("ClientSpend: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("ClientSpend(%v, %v) = %+v, want %+v", from, to, got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Client != w.Client || !g.Day.Equal(w.Day) || math.Abs(g.USD-w.USD) > 1e-9 {
			t.Errorf("ClientSpend(%v, %v)[%d] = %+v, want %+v", from, to, i, g, w)
		}
	}
}

// checkSpendOfLedger checks that a store keeping spend holds, for the
// UTC days [from, to) touches, the sums of entries (a migrated ledger's:
// what the store kept before it kept spend is summed too).
func checkSpendOfLedger(t *testing.T, st llmfleet.Store, from, to time.Time, entries []llmfleet.LedgerEntry) {
	t.Helper()
	if _, ok := st.(llmfleet.SpendStore); !ok {
		return
	}
	sums := map[llmfleet.ClientSpend]float64{}
	for _, e := range entries {
		if e.Client != "" && e.CostUSD != 0 {
			sums[llmfleet.ClientSpend{Client: e.Client, Day: llmfleet.UTCDay(e.Time)}] += e.CostUSD
		}
	}
	var want []llmfleet.ClientSpend
	for k, usd := range sums {
		k.USD = usd
		want = append(want, k)
	}
	slices.SortFunc(want, func(a, b llmfleet.ClientSpend) int {
		return cmp.Or(strings.Compare(a.Client, b.Client), a.Day.Compare(b.Day))
	})
	checkSpend(t, st, from, to, want)
}
