package proxy_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/proxy"
	"github.com/llmfleet/llmfleet/sqlite"
)

// A client at its monthly limit is refused until the UTC month ends, on
// the proxy's clock: a second before, 429 naming the limit and its reset
// (Retry-After 1); at the new month, its call goes through.
func TestClientRulesMonthBoundary(t *testing.T) {
	clock := newManualClock() // 2026-01-01 00:00 UTC
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "llmfleet.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.AddLedger(t.Context(), []llmfleet.LedgerEntry{{Time: clock.Now().AddDate(0, 0, 14), Client: "alice",
		Provider: "anthropic", Model: "claude-test", Route: llmfleet.RouteSync, Outcome: "ok", CostUSD: 1000, Priced: true}}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(31*24*time.Hour - time.Second) // 2026-01-31 23:59:59 UTC
	spend := ledger.NewSpend(ledger.SpendConfig{Store: db, Clock: clock,
		Limits: map[string]ledger.ClientLimits{"alice": {DailyUSD: 100, MonthlyUSD: 1000}}})
	srv := &proxy.Server{ClientRules: spend.Check, Clock: clock,
		ClientName: func(llmfleet.Credential) string { return "alice" }}
	ts := newProxy(t, srv, newUpstream(t))
	body := `{"model":"claude-test","max_tokens":64,"messages":[{"role":"user","content":"at the month's end"}]}`
	resp := post(t, ts.URL+"/v1/messages", body)
	msg := readAll(t, resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" ||
		!strings.Contains(msg, `"type":"rate_limit_error"`) ||
		!strings.Contains(msg, "Client alice has reached its monthly-usd limit of $1000.00 (paid $1000.00 this UTC month); llmfleet takes its calls again at 2026-02-01T00:00:00Z.") {
		t.Fatalf("a second before the month ends: %d %v %s", resp.StatusCode, resp.Header, msg)
	}
	clock.Advance(time.Second)
	resp = post(t, ts.URL+"/v1/messages", body)
	if msg := readAll(t, resp.Body); resp.StatusCode != 200 || !strings.Contains(msg, "sync answer") {
		t.Fatalf("in the new month: %d %s", resp.StatusCode, msg)
	}
}
