package ledger

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
)

func TestParsePeriod(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		since, from, to string
		start, end      time.Time
	}{
		{"24h", "", "", now.Add(-24 * time.Hour), now},
		{"7d", "", "", now.Add(-7 * 24 * time.Hour), now},
		{"0", "", "", time.Time{}, now},
		{"", "", "", time.Time{}, now},
		{"", "2026-04-01T00:00:00Z", "2026-04-02T00:00:00Z",
			time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 2, 0, 0, 0, 0, time.UTC)},
		{"1h", "", "2026-04-02T00:00:00Z", time.Date(2026, 4, 1, 23, 0, 0, 0, time.UTC), time.Date(2026, 4, 2, 0, 0, 0, 0, time.UTC)},
	} {
		p, err := ParsePeriod(c.since, c.from, c.to, now)
		if err != nil || !p.From.Equal(c.start) || !p.To.Equal(c.end) {
			t.Errorf("%+v: %v %v", c, p, err)
		}
	}
	for _, bad := range [][3]string{{"soon", "", ""}, {"-1h", "", ""}, {"1h", "2026-04-01T00:00:00Z", ""},
		{"", "yesterday", ""}, {"", "", "tomorrow"}, {"", "2026-04-02T00:00:00Z", "2026-04-01T00:00:00Z"}} {
		if _, err := ParsePeriod(bad[0], bad[1], bad[2], now); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// readerFunc is a Reader.
type readerFunc func(ctx context.Context, from, to time.Time) ([]llmfleet.LedgerEntry, error)

func (f readerFunc) Ledger(ctx context.Context, from, to time.Time) ([]llmfleet.LedgerEntry, error) {
	return f(ctx, from, to)
}

func TestSummarizePeriodReads(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var asked [2]time.Time
	r := readerFunc(func(_ context.Context, from, to time.Time) ([]llmfleet.LedgerEntry, error) {
		asked = [2]time.Time{from, to}
		return []llmfleet.LedgerEntry{
			{Time: now.Add(-time.Hour), Route: llmfleet.RouteSync, Outcome: "ok"},
			{Time: now.Add(-time.Minute), Route: llmfleet.RouteBatch, Outcome: "ok"},
		}, nil
	})
	s, err := SummarizePeriod(context.Background(), r, Period{To: now})
	if err != nil {
		t.Fatal(err)
	}
	if !asked[0].Equal(time.Unix(0, 0)) || !asked[1].Equal(now) {
		t.Fatalf("read [%v, %v), want from the epoch to now", asked[0], asked[1])
	}
	if s.SyncCalls != 1 || s.BatchedCalls != 1 {
		t.Fatalf("summary %+v", s)
	}
	from := now.Add(-2 * time.Hour)
	if _, err := SummarizePeriod(context.Background(), r, Period{From: from, To: now}); err != nil || !asked[0].Equal(from) {
		t.Fatalf("read from %v (%v), want %v", asked[0], err, from)
	}
	failing := readerFunc(func(context.Context, time.Time, time.Time) ([]llmfleet.LedgerEntry, error) {
		return nil, errors.New("disk gone")
	})
	if _, err := SummarizePeriod(context.Background(), failing, Period{To: now}); err == nil {
		t.Fatal("a read error was not returned")
	}
}
