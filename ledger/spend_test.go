package ledger_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/providertest"
)

// spendStore is a SpendStore over entries, counting its reads.
type spendStore struct {
	mu      sync.Mutex
	entries []llmfleet.LedgerEntry
	reads   int
}

func (s *spendStore) add(client string, at time.Time, usd float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = append(s.entries, llmfleet.LedgerEntry{Client: client, Time: at, CostUSD: usd})
}

func (s *spendStore) ClientSpend(_ context.Context, from, to time.Time) ([]llmfleet.ClientSpend, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	sums := map[[2]any]float64{}
	var out []llmfleet.ClientSpend
	for _, e := range s.entries {
		d := llmfleet.UTCDay(e.Time)
		if d.Before(llmfleet.UTCDay(from)) || !d.Before(to) {
			continue
		}
		sums[[2]any{e.Client, d}] += e.CostUSD
	}
	for k, usd := range sums {
		out = append(out, llmfleet.ClientSpend{Client: k[0].(string), Day: k[1].(time.Time), USD: usd})
	}
	return out, nil
}

// A daily limit holds within the UTC day and resets at UTC midnight; a
// monthly one at the first of the next UTC month; what this process paid
// counts at once, what others wrote to the store once the TTL has passed.
func TestSpendLimitsUTCBoundaries(t *testing.T) {
	start := time.Date(2026, 11, 30, 23, 58, 0, 0, time.UTC)                        // two minutes before a new UTC day and month
	clock := providertest.NewManualClock(start.In(time.FixedZone("UTC+5", 5*3600))) // the local day is Dec 1 already
	store := &spendStore{}
	store.add("alice", start.Add(-48*time.Hour), 900)     // earlier this month
	store.add("alice", start.Add(-31*24*time.Hour), 5000) // last month
	s := ledger.NewSpend(ledger.SpendConfig{Store: store, Clock: clock, TTL: time.Second, Limits: map[string]ledger.ClientLimits{
		"alice": {DailyUSD: 50, MonthlyUSD: 1000, OverLimit: ledger.OverBatchOnly},
		"zed":   {ZDR: true},
	}})
	ctx := t.Context()
	if v := s.Check(ctx, "alice"); v.Limit != "" || v.BatchOnly {
		t.Fatalf("under its limits: %+v", v)
	}
	if v := s.Check(ctx, "zed"); !v.ZDR || v.Limit != "" {
		t.Fatalf("zdr client: %+v", v)
	}
	if v := s.Check(ctx, "nobody"); v != (ledger.Verdict{}) {
		t.Fatalf("client without limits: %+v", v)
	}
	s.Paid(llmfleet.LedgerEntry{Client: "alice", Time: clock.Now(), CostUSD: 49.5})
	if v := s.Check(ctx, "alice"); v.Limit != "" {
		t.Fatalf("49.5 of 50 paid: %+v", v)
	}
	store.add("alice", clock.Now(), 0.5) // another replica's, not read yet
	if v := s.Check(ctx, "alice"); v.Limit != "" {
		t.Fatalf("read before its TTL: %+v", v)
	}
	store.add("alice", clock.Now(), 49.5) // what this process paid, now written
	clock.Advance(time.Second)
	v := s.Check(ctx, "alice")
	midnight := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if v.Limit != "daily-usd" || v.LimitUSD != 50 || v.SpentUSD != 50 || !v.BatchOnly || !v.Resets.Equal(midnight) {
		t.Fatalf("at the daily limit: %+v", v)
	}
	// The monthly limit, reached later on the same day, wins: it resets later.
	s.Paid(llmfleet.LedgerEntry{Client: "alice", Time: clock.Now(), CostUSD: 50})
	if v := s.Check(ctx, "alice"); v.Limit != "monthly-usd" || v.SpentUSD != 1000 || !v.Resets.Equal(midnight) {
		t.Fatalf("at the monthly limit on the month's last day: %+v", v)
	}
	store.add("alice", clock.Now(), 50)
	clock.Advance(midnight.Sub(clock.Now()) - time.Nanosecond)
	if v := s.Check(ctx, "alice"); v.Limit != "monthly-usd" {
		t.Fatalf("a nanosecond before midnight: %+v", v)
	}
	clock.Advance(time.Nanosecond)
	if v := s.Check(ctx, "alice"); v.Limit != "" {
		t.Fatalf("at UTC midnight, a new day and month: %+v", v)
	}
	// A new day in the same month: the daily limit resets, the month's sum stays.
	clock.Advance(24 * time.Hour)
	store.add("alice", clock.Now(), 60)
	clock.Advance(time.Second)
	if v := s.Check(ctx, "alice"); v.Limit != "daily-usd" || !v.Resets.Equal(midnight.AddDate(0, 0, 2)) {
		t.Fatalf("over the daily limit on the 2nd: %+v", v)
	}
	clock.Advance(24 * time.Hour)
	st := s.Clients(ctx)
	if len(st) != 2 || st[0].Client != "alice" || st[0].TodayUSD != 0 || st[0].MonthUSD != 60 || st[0].Limit != "" ||
		st[1].Client != "zed" || !st[1].ZDR || st[1].OverLimit != ledger.OverReject {
		t.Fatalf("Clients on the 3rd: %+v", st)
	}
}

// The store is read once per TTL however many calls check.
func TestSpendReadsOncePerTTL(t *testing.T) {
	clock := providertest.NewManualClock(time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC))
	store := &spendStore{}
	s := ledger.NewSpend(ledger.SpendConfig{Store: store, Clock: clock,
		Limits: map[string]ledger.ClientLimits{"alice": {DailyUSD: 1}}})
	for range 10 {
		s.Check(t.Context(), "alice")
	}
	clock.Advance(ledger.DefaultSpendTTL)
	s.Check(t.Context(), "alice")
	if store.reads != 2 {
		t.Fatalf("%d reads, want 2", store.reads)
	}
}

// Limits that cannot be applied are refused, naming what to change.
func TestClientLimitsCheck(t *testing.T) {
	for _, tc := range []struct {
		l    ledger.ClientLimits
		want string
	}{
		{ledger.ClientLimits{DailyUSD: -1}, "daily-usd is -1; give a positive number"},
		{ledger.ClientLimits{MonthlyUSD: -5}, "monthly-usd is -5"},
		{ledger.ClientLimits{DailyUSD: 1, OverLimit: "queue"}, `over-limit is "queue"; use reject or batch-only`},
		{ledger.ClientLimits{DailyUSD: 1, OverLimit: ledger.OverBatchOnly, ZDR: true}, "use over-limit: reject"},
	} {
		err := tc.l.Check("alice")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "alice") {
			t.Errorf("%+v: %v, want %q", tc.l, err, tc.want)
		}
	}
	if err := (ledger.ClientLimits{DailyUSD: 50, MonthlyUSD: 1000, OverLimit: ledger.OverBatchOnly}).Check("alice"); err != nil {
		t.Errorf("valid limits: %v", err)
	}
}

// failingStore fails every read.
type failingStore struct{ reads int }

func (f *failingStore) ClientSpend(context.Context, time.Time, time.Time) ([]llmfleet.ClientSpend, error) {
	f.reads++
	return nil, errors.New("database down")
}

// Until the store has been read once, calls are not held back by it: a
// failed read is tried again a TTL later, and the limits wait for it.
func TestSpendStoreDown(t *testing.T) {
	clock := providertest.NewManualClock(time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC))
	store := &failingStore{}
	s := ledger.NewSpend(ledger.SpendConfig{Store: store, Clock: clock,
		Limits: map[string]ledger.ClientLimits{"alice": {DailyUSD: 1}}})
	s.Paid(llmfleet.LedgerEntry{Client: "alice", Time: clock.Now(), CostUSD: 5})
	for range 3 {
		if v := s.Check(t.Context(), "alice"); v.Limit != "" {
			t.Fatalf("store down: %+v", v)
		}
	}
	clock.Advance(ledger.DefaultSpendTTL)
	s.Check(t.Context(), "alice")
	if store.reads != 2 {
		t.Fatalf("%d reads, want 2", store.reads)
	}
}

// Payments booked while the store is read, and checks from many
// goroutines, leave the sums exact at the next read once the store holds
// the payments (between reads they may be off by what was booked during
// one: the TTL bounds it).
func TestSpendConcurrent(t *testing.T) {
	clock := providertest.NewManualClock(time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC))
	store := &spendStore{}
	s := ledger.NewSpend(ledger.SpendConfig{Store: store, Clock: clock, TTL: time.Millisecond,
		Limits: map[string]ledger.ClientLimits{"alice": {DailyUSD: 1000}}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				e := llmfleet.LedgerEntry{Client: "alice", Time: clock.Now(), CostUSD: 0.25}
				store.add(e.Client, e.Time, e.CostUSD)
				s.Paid(e)
				s.Check(t.Context(), "alice")
			}
		})
	}
	wg.Go(func() { // reads of the store while payments are booked
		for range 50 {
			clock.Advance(time.Millisecond)
			s.Check(t.Context(), "alice")
		}
	})
	wg.Wait()
	clock.Advance(time.Millisecond)
	if st := s.Clients(t.Context()); st[0].TodayUSD != 100 || st[0].MonthUSD != 100 {
		t.Fatalf("after 400 payments of $0.25: %+v", st)
	}
}
