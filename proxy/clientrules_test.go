package proxy_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/middleware/anthropicmw"
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

// The Anthropic SDK middleware applies the client's rules as the proxy
// does: a ZDR client's call says why it went sync, its forced batch is a
// 400; a client over its limit gets the 429, which the SDK does not retry.
func TestClientRulesMiddleware(t *testing.T) {
	up := newUpstream(t)
	verdicts := map[string]ledger.Verdict{
		"sk-zdr":  {ZDR: true},
		"sk-over": {Limit: "daily-usd", LimitUSD: 5, SpentUSD: 6, Resets: time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)},
	}
	var asked atomic.Int32
	srv := &proxy.Server{Submitter: &fakeSubmitter{route: llmfleet.RouteSync}, PingInterval: time.Millisecond,
		ClientName: func(c llmfleet.Credential) string { return c.APIKey },
		ClientRules: func(_ context.Context, client string) ledger.Verdict {
			asked.Add(1)
			return verdicts[client]
		}}
	ctx := llmfleet.WithBudget(context.Background(), 10*time.Minute)
	zdr := newClient(up.URL, option.WithMiddleware(anthropicmw.New(srv)), optAPIKey("sk-zdr"))
	var raw *http.Response
	if _, err := zdr.Messages.New(ctx, userParams("zdr"), optResponse(&raw)); err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get("llmfleet-route") != "sync" || !strings.HasPrefix(raw.Header.Get("llmfleet-route-reason"), "zdr: client sk-zdr") {
		t.Fatalf("zdr call: %v", raw.Header)
	}
	_, err := zdr.Messages.New(ctx, userParams("zdr forced"), optHeader("llmfleet-route", "batch"))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Error(), "never batched") {
		t.Fatalf("zdr forced batch: %v", err)
	}
	asked.Store(0)
	over := newClient(up.URL, option.WithMiddleware(anthropicmw.New(srv)), optAPIKey("sk-over"), option.WithMaxRetries(2))
	_, err = over.Messages.New(ctx, userParams("over"))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || !strings.Contains(apiErr.Error(), "rate_limit_error") ||
		!strings.Contains(apiErr.Error(), "2026-11-28T00:00:00Z") {
		t.Fatalf("over its limit: %v", err)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the SDK asked %d times, want 1: a spend limit is not retried", n)
	}
	if n := len(up.requests()); n != 1 {
		t.Fatalf("%d calls upstream, want the zdr one alone", n)
	}
}
