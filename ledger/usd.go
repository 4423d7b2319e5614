package ledger

import (
	"math"
	"strconv"
)

// The ledger's dollar figures are sums and differences of prices per
// million tokens, which binary floating point cannot hold exactly: summed,
// $0.000789895 becomes 0.0007898949999999999. They are rounded to the
// nano-dollar (1e-9 USD, far below any price of a token) where they are
// shown: Summary's figures, and the log lines that print them as USD.

// RoundUSD rounds a dollar amount to the nano-dollar, the nearest float
// to that decimal, so that it prints as the decimal it is
// (strconv.FormatFloat(v, 'f', -1, 64), encoding/json). NaN, infinities
// and amounts too large to round are returned as they are; -0 is 0.
func RoundUSD(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) >= 1e12 {
		return v
	}
	r := math.Round(v*1e9) / 1e9
	if r == 0 {
		return 0
	}
	return r
}

// USD is a dollar amount that prints rounded to the nano-dollar, in plain
// decimal notation: as text (String, MarshalText: slog's text handler)
// and as a JSON number (MarshalJSON: slog's JSON handler). Give it to a
// logger as slog.Any("paid_usd", ledger.USD(v)).
type USD float64

// String returns the amount as a decimal, rounded to the nano-dollar
// ("0.000789895", "12.5", "0"); "NaN" and "+Inf" as strconv gives them.
func (u USD) String() string {
	return strconv.FormatFloat(RoundUSD(float64(u)), 'f', -1, 64)
}

// MarshalText returns String's text.
func (u USD) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// MarshalJSON returns the amount as a JSON number, null if it is not
// finite (JSON has no number for it).
func (u USD) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(u)) || math.IsInf(float64(u), 0) {
		return []byte("null"), nil
	}
	return []byte(u.String()), nil
}

// roundUSD rounds the dollar figures of b.
func (b *Breakdown) roundUSD() {
	for _, v := range []*float64{&b.CostUSD, &b.SyncEquivalentUSD, &b.SavedUSD, &b.RoutingMissUSD, &b.NetSavedUSD} {
		*v = RoundUSD(*v)
	}
}

// roundUSD rounds the dollar figures of s, of its breakdowns and of the
// entries it lists.
func (s *Summary) roundUSD() {
	for _, v := range []*float64{&s.CostUSD, &s.SyncEquivalentUSD, &s.SavedUSD, &s.LateUSD, &s.RoutingMissUSD, &s.NetSavedUSD} {
		*v = RoundUSD(*v)
	}
	for _, m := range []map[string]Breakdown{s.ByModel, s.ByRoute, s.ByProvider, s.ByTier, s.ByClient} {
		roundBreakdowns(m)
	}
	for _, m := range s.ByRouteModel {
		roundBreakdowns(m)
	}
	for i := range s.RecentBudgetMisses {
		e := &s.RecentBudgetMisses[i]
		e.CostUSD, e.OtherRouteUSD, e.MissUSD = RoundUSD(e.CostUSD), RoundUSD(e.OtherRouteUSD), RoundUSD(e.MissUSD)
	}
}

// roundBreakdowns rounds the dollar figures of the breakdowns of m.
func roundBreakdowns(m map[string]Breakdown) {
	for k, b := range m {
		b.roundUSD()
		m[k] = b
	}
}
