package ledger

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/llmfleet/llmfleet"
)

// TestUSDPrintsClean: dollar amounts print as the decimals they are, in
// slog's text and JSON lines and in JSON, not as their float noise.
func TestUSDPrintsClean(t *testing.T) {
	noisy := 0.0007898949999999999
	for v, want := range map[float64]string{noisy: "0.000789895", 0.0001734 - 0.0001604: "0.000013", 12.5: "12.5", -1e-12: "0", 0: "0", -0.25: "-0.25"} {
		if got := USD(v).String(); got != want {
			t.Errorf("USD(%v) = %q, want %q", v, got, want)
		}
	}
	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("x", "paid_usd", USD(noisy))
	slog.New(slog.NewJSONHandler(&js, nil)).Info("x", "paid_usd", USD(noisy))
	if !strings.Contains(text.String(), "paid_usd=0.000789895\n") || !strings.Contains(js.String(), `"paid_usd":0.000789895}`) {
		t.Errorf("text %q json %q", text.String(), js.String())
	}
	if b, err := json.Marshal(map[string]USD{"a": USD(math.NaN())}); err != nil || string(b) != `{"a":null}` {
		t.Errorf("NaN: %s %v", b, err)
	}
}

// TestSummaryRoundsUSD: the figures of a summary, its breakdowns and its
// listed entries are rounded to the nano-dollar, so that its JSON shows
// no float noise.
func TestSummaryRoundsUSD(t *testing.T) {
	var tot Totals
	for _, c := range []float64{0.0001604, 0.00062949499999999, 0.0000000001} {
		tot.Add(llmfleet.LedgerEntry{Model: "m", Outcome: "ok", Priced: true, CostUSD: c, OtherRouteUSD: 2 * c,
			Route: llmfleet.RouteBatch, Budget: 1, BudgetMet: false})
	}
	s := tot.Summary()
	b, _ := json.Marshal(s)
	if s.CostUSD != 0.000789895 || s.ByModel["m"].CostUSD != 0.000789895 || s.RecentBudgetMisses[0].CostUSD != 0 {
		t.Errorf("summary cost %v, by model %v, a miss %v", s.CostUSD, s.ByModel["m"].CostUSD, s.RecentBudgetMisses[0].CostUSD)
	}
	if bytes.Contains(b, []byte("99999")) || bytes.Contains(b, []byte("00000000")) {
		t.Errorf("float noise in %s", b)
	}
}
