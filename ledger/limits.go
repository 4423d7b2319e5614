package ledger

import (
	"fmt"
	"math"
	"time"

	"github.com/llmfleet/llmfleet"
)

// OverLimit is what becomes of a client's calls once it has reached one
// of its spend limits.
type OverLimit string

const (
	// OverReject refuses them: 429 in the provider's envelope until the
	// limit's period ends.
	OverReject OverLimit = "reject"
	// OverBatchOnly takes them only on the batch route (429 when their
	// budget cannot be met by a batch).
	OverBatchOnly OverLimit = "batch-only"
)

// ClientLimits are the spend limits and the data rule of one client,
// named as its ledger entries name it (LedgerEntry.Client).
type ClientLimits struct {
	// DailyUSD and MonthlyUSD bound what the client pays in a UTC day and
	// in a UTC calendar month; 0 sets no bound.
	DailyUSD, MonthlyUSD float64
	// OverLimit is what becomes of its calls over a limit; "" means
	// OverReject.
	OverLimit OverLimit
	// ZDR (zero data retention) keeps its calls off the batch route,
	// whatever their budget: batches are not ZDR-eligible.
	ZDR bool
}

// Check returns an error naming what to change if the limits of client
// cannot be applied.
func (l ClientLimits) Check(client string) error {
	for _, v := range []struct {
		name string
		usd  float64
	}{{"daily-usd", l.DailyUSD}, {"monthly-usd", l.MonthlyUSD}} {
		if v.usd < 0 || math.IsNaN(v.usd) || math.IsInf(v.usd, 0) {
			return fmt.Errorf("clients: %s: %s is %v; give a positive number of USD, or leave it out for no limit", client, v.name, v.usd)
		}
	}
	switch l.OverLimit {
	case "", OverReject:
	case OverBatchOnly:
		if l.ZDR {
			return fmt.Errorf("clients: %s: over-limit batch-only cannot apply to a zdr client, whose calls are never batched; use over-limit: reject", client)
		}
	default:
		return fmt.Errorf("clients: %s: over-limit is %q; use reject or batch-only", client, l.OverLimit)
	}
	return nil
}

// limited reports whether l bounds what the client pays.
func (l ClientLimits) limited() bool { return l.DailyUSD > 0 || l.MonthlyUSD > 0 }

// Verdict is what a client's limits say of its next call.
type Verdict struct {
	// ZDR keeps the call off the batch route.
	ZDR bool
	// Limit names the limit the client has reached ("daily-usd" or
	// "monthly-usd"; the monthly one when both); "" when none.
	Limit string
	// LimitUSD and SpentUSD are that limit and what the client paid in
	// its period.
	LimitUSD, SpentUSD float64
	// Resets is when the period of that limit ends (UTC).
	Resets time.Time
	// BatchOnly: over the limit, the call is taken only batched; false
	// refuses it.
	BatchOnly bool
}

// verdict returns what l says of a client that paid today and month by
// now.
func (l ClientLimits) verdict(now time.Time, today, month float64) Verdict {
	v := Verdict{ZDR: l.ZDR, BatchOnly: l.OverLimit == OverBatchOnly}
	day := llmfleet.UTCDay(now)
	if l.DailyUSD > 0 && today >= l.DailyUSD {
		v.Limit, v.LimitUSD, v.SpentUSD, v.Resets = "daily-usd", l.DailyUSD, today, day.AddDate(0, 0, 1)
	}
	if l.MonthlyUSD > 0 && month >= l.MonthlyUSD {
		v.Limit, v.LimitUSD, v.SpentUSD, v.Resets = "monthly-usd", l.MonthlyUSD, month, llmfleet.UTCMonth(now).AddDate(0, 1, 0)
	}
	if v.Limit == "" {
		v.BatchOnly = false
	}
	return v
}
