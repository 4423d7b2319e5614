package llmfleet

import (
	"context"
	"time"
)

// ClientSpend is what one client paid on one UTC day: the CostUSD of its
// ledger entries (LedgerEntry.Client) whose Time falls on that day.
type ClientSpend struct {
	// Client names the client as its ledger entries do.
	Client string
	// Day is the start of the UTC day.
	Day time.Time
	// USD is what the client paid that day.
	USD float64
}

// SpendStore is a Store that keeps what each client paid by UTC day, as
// its ledger entries are added, so that a spend limit can be checked
// against what every process sharing the store paid.
type SpendStore interface {
	// ClientSpend returns what each client paid on each UTC day that
	// [from, to) touches (from's day, to's unless to is its start, and
	// those between), by client (byte order), then day;
	// days on which a client paid nothing, and entries naming no client,
	// are left out.
	ClientSpend(ctx context.Context, from, to time.Time) ([]ClientSpend, error)
}

// UTCDay returns the start of t's UTC day.
func UTCDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// UTCMonth returns the start of t's UTC calendar month.
func UTCMonth(t time.Time) time.Time {
	y, m, _ := t.UTC().Date()
	return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
}
