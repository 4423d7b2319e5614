package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/dashboard"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/ledger"
	"github.com/llmfleet/llmfleet/pricing"
)

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// listPrice is a model's published price in USD per million tokens of
// each kind, at the sync route. The batch route pays half of each.
type listPrice struct{ input, output, write5m, write1h, read float64 }

// The published prices of the models of the workload, written out here
// rather than read from the price table, so that the test checks it.
var listPrices = map[string]listPrice{
	"claude-sonnet-4-6": {input: 3, output: 15, write5m: 3.75, write1h: 6, read: 0.30},
	"claude-haiku-4-5":  {input: 1, output: 5, write5m: 1.25, write1h: 2, read: 0.10},
	// Priced only by the config file of the test.
	"claude-custom-1": {input: 2, output: 10, write5m: 2.5, write1h: 4, read: 0.20},
}

// expected accumulates what the workload must cost, computed from the
// usage the emulator reported to the client.
type expected struct {
	cost, syncEquivalent float64
	// positiveSaved sums the savings of the batched calls that saved.
	positiveSaved float64
	byModel       map[string]float64
	// calls are the calls answered, in order, for the sync world's replay
	// (see replaySync).
	calls    []answered
	tokens1h int64 // 1-hour cache writes of claude-sonnet-4-6 at the sync route
	// cache holds the cache tokens by route and model ("sync/" + model).
	cache map[string]ledger.Tokens
}

// answered is a call answered: its request, its route and what its usage
// costs at the sync price.
type answered struct {
	params anthropic.MessageNewParams
	batch  bool
	sync   float64
}

// syncPrice is what usage u of model costs at the sync route's list price.
func syncPrice(t *testing.T, model string, u anthropic.Usage) float64 {
	t.Helper()
	p, ok := listPrices[model]
	if !ok {
		t.Fatalf("no list price for %s", model)
	}
	w5, w1 := u.CacheCreation.Ephemeral5mInputTokens, u.CacheCreation.Ephemeral1hInputTokens
	if w5+w1 != u.CacheCreationInputTokens {
		t.Fatalf("%s: cache writes split %d+%d of %d", model, w5, w1, u.CacheCreationInputTokens)
	}
	return (float64(u.InputTokens)*p.input + float64(u.OutputTokens)*p.output +
		float64(w5)*p.write5m + float64(w1)*p.write1h + float64(u.CacheReadInputTokens)*p.read) / 1e6
}

// add counts a call answered with usage u. Its sync equivalent is counted
// by replaySync.
func (x *expected) add(t *testing.T, params anthropic.MessageNewParams, u anthropic.Usage, batch bool) {
	t.Helper()
	model := string(params.Model)
	sync := syncPrice(t, model, u)
	w5, w1 := u.CacheCreation.Ephemeral5mInputTokens, u.CacheCreation.Ephemeral1hInputTokens
	paid := sync
	if batch {
		paid = sync / 2
	}
	x.cost += paid
	x.calls = append(x.calls, answered{params: params, batch: batch, sync: sync})
	if x.byModel == nil {
		x.byModel = map[string]float64{}
	}
	x.byModel[model] += paid
	if model == "claude-sonnet-4-6" && !batch {
		x.tokens1h += w1
	}
	route := "sync"
	if batch {
		route = "batch"
	}
	if x.cache == nil {
		x.cache = map[string]ledger.Tokens{}
	}
	c := x.cache[route+"/"+model]
	c.CacheRead += u.CacheReadInputTokens
	c.CacheWrite5m += w5
	c.CacheWrite1h += w1
	x.cache[route+"/"+model] = c
}

// replaySync counts what the calls answered would have paid at the sync
// route: each sync call what it paid, each batched call the lesser of its
// own usage at the sync price and what it costs when every call answered
// is sent sync, in order, to a fresh emulator (whose sync cache then holds
// what a sync-only client's would: a batched call may find its prefix warm
// there, or cold where the batch cache had it).
func (x *expected) replaySync(t *testing.T) {
	t.Helper()
	ts := httptest.NewServer(&emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return 0 },
		Models: append(pricing.Default().Models(pricing.DefaultProvider), "claude-custom-1")})
	defer ts.Close()
	client := anthropic.NewClient(option.WithBaseURL(ts.URL), option.WithAPIKey("sk-replay"), option.WithMaxRetries(0))
	for _, c := range x.calls {
		if len(c.params.Messages) == 0 { // a call cut, not answered: its estimate
			x.syncEquivalent += c.sync
			continue
		}
		msg, err := client.Messages.New(context.Background(), c.params)
		if err != nil {
			t.Fatal(err)
		}
		replayed := syncPrice(t, string(c.params.Model), msg.Usage)
		switch {
		case !c.batch && math.Abs(replayed-c.sync) > 1e-12:
			t.Fatalf("sync call replayed at $%v, paid $%v", replayed, c.sync)
		case c.batch:
			x.syncEquivalent += min(replayed, c.sync)
			x.positiveSaved += max(0, min(replayed, c.sync)-c.sync/2)
		default:
			x.syncEquivalent += c.sync
		}
	}
}

// checkCache checks the cache figures of a summary: each route and
// model's cache tokens and hit rate against the usage the client got, and
// the net saving against the saving and the routing misses of the entries
// paid at the sync price.
func checkCache(t *testing.T, where string, s ledger.Summary, want expected) {
	t.Helper()
	for key, c := range want.cache {
		route, model, _ := strings.Cut(key, "/")
		b := s.ByRouteModel[route][model]
		rate := float64(c.CacheRead) / float64(c.CacheRead+c.CacheWrite5m+c.CacheWrite1h)
		if b.Tokens.CacheRead != c.CacheRead || b.Tokens.CacheWrite5m != c.CacheWrite5m || b.Tokens.CacheWrite1h != c.CacheWrite1h ||
			math.Abs(b.CacheHitRate-rate) > 1e-12 {
			t.Errorf("%s: %s cache %+v hit rate %v, want %+v %v", where, key, b.Tokens, b.CacheHitRate, c, rate)
		}
	}
	var syncMiss float64 // the routing misses of the priced sync entries
	for _, b := range s.ByRouteModel["sync"] {
		if b.UnpricedRequests == 0 {
			syncMiss += b.RoutingMissUSD
		}
	}
	checkUSD(t, where+" net_saved_usd", s.NetSavedUSD, s.SavedUSD-syncMiss)
	if s.RoutingMissUSD < syncMiss || s.CacheHitRate <= 0 || s.CacheHitRate >= 1 || s.ByRoute["batch"].CacheHitRate <= 0 {
		t.Errorf("%s: routing misses %v (sync %v), hit rate %v, batch's %v", where, s.RoutingMissUSD, syncMiss,
			s.CacheHitRate, s.ByRoute["batch"].CacheHitRate)
	}
}

// cachedPrompt is a prompt whose system has a 1-hour breakpoint on a long
// block (unless with1h is false) and a 5-minute one on a shorter block,
// long enough for the costs to show in cents. Prompts of different
// fleets (e.g. "a", "b") share no cache entry.
func cachedPrompt(model, question, fleet string, with1h bool) anthropic.MessageNewParams {
	system := []anthropic.TextBlockParam{
		{Text: strings.Repeat("You are a careful assistant of fleet "+fleet+". ", 4000),
			CacheControl: anthropic.CacheControlEphemeralParam{TTL: anthropic.CacheControlEphemeralTTLTTL1h}},
		{Text: strings.Repeat("Today's briefing for fleet "+fleet+". ", 2000),
			CacheControl: anthropic.CacheControlEphemeralParam{TTL: anthropic.CacheControlEphemeralTTLTTL5m}},
	}
	if !with1h {
		system = system[1:]
	}
	return anthropic.MessageNewParams{
		Model: anthropic.Model(model), MaxTokens: 400, System: system,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(question))},
	}
}

// testAdminKey is the admin key the ledger test serves with.
const testAdminKey = "admin-test-key"

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("X-Api-Key", testAdminKey) // to see the per-request fields
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func getText(t *testing.T, url string) (string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return string(body), resp.Header
}

// cents formats dollars to the cent.
func cents(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// checkUSD checks a figure to the cent, and to rounding noise.
func checkUSD(t *testing.T, what string, got, want float64) {
	t.Helper()
	if cents(got) != cents(want) || math.Abs(got-want) > 1e-9 {
		t.Errorf("%s = %.12f, want %.12f", what, got, want)
	}
}

// TestLedgerFigures drives a known workload through the whole stack (proxy
// → dispatcher → claude → emulator on loopback), sync and batched, plain
// and streamed, with 5-minute and 1-hour cache writes and cache reads, and
// checks what the stats, the metrics, the dashboard and "llmfleet stats"
// report against costs computed here from the usage the emulator gave the
// client and the published prices.
func TestLedgerFigures(t *testing.T) {
	// The emulator serves the model the config file prices, as it refuses
	// unknown ones, and answers an alias with its dated id, as the API
	// does: the ledger and the metrics count both names as one model.
	emu := &emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return 0 },
		Models: append(pricing.Default().Models(pricing.DefaultProvider), "claude-custom-1")}
	// The size of the body of the call cut by its hard deadline, whose
	// usage the ledger estimates from it.
	cutBody := make(chan int, 1)
	emuTS := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if bytes.Contains(b, []byte("sixth question")) {
			cutBody <- len(b)
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		emu.ServeHTTP(w, r)
	}))
	defer emuTS.Close()

	t.Setenv("LLMFLEET_TEST_ADMIN", testAdminKey)
	db := filepath.Join(t.TempDir(), "llmfleet.db")
	cfg := writeFile(t, "anthropic-url: "+emuTS.URL+"\n"+
		"batch-window: 5ms\npoll-interval: 2ms\nmax-poll-interval: 5ms\nturnaround-prior: 10ms\nping-interval: 1ms\n"+
		"pricing:\n  anthropic:\n    models:\n      claude-custom-1: {input: 2, output: 10}\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(lineWriter, 4)
	logs := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--config", cfg, "--listen", "127.0.0.1:0", "--db", db, "--log-format", "json",
			"--admin-key-env", "LLMFLEET_TEST_ADMIN"}, out, logs)
	}()
	var line string
	select {
	case line = <-out:
	case err := <-done:
		t.Fatalf("serve ended: %v\n%s", err, logs)
	}
	var start struct{ Addr string }
	if err := json.Unmarshal([]byte(line), &start); err != nil || start.Addr == "" {
		t.Fatalf("startup line %q: %v", line, err)
	}
	base := start.Addr

	const key = "sk-ledger-test-key"
	client := anthropic.NewClient(option.WithBaseURL(base), option.WithAPIKey(key), option.WithMaxRetries(0))
	batch := option.WithHeader("llmfleet-route", "batch")
	var want expected
	call := func(params anthropic.MessageNewParams, isBatch bool, opts ...option.RequestOption) anthropic.Usage {
		t.Helper()
		if isBatch {
			opts = append(opts, batch)
		}
		msg, err := client.Messages.New(context.Background(), params, opts...)
		if err != nil {
			t.Fatal(err)
		}
		want.add(t, params, msg.Usage, isBatch)
		return msg.Usage
	}
	stream := func(params anthropic.MessageNewParams, isBatch bool) anthropic.Usage {
		t.Helper()
		var opts []option.RequestOption
		if isBatch {
			opts = append(opts, batch)
		}
		s := client.Messages.NewStreaming(context.Background(), params, opts...)
		var msg anthropic.Message
		for s.Next() {
			if err := msg.Accumulate(s.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		s.Close()
		want.add(t, params, msg.Usage, isBatch)
		return msg.Usage
	}

	// Sync: the first call writes both cache entries, the streamed one
	// reads them.
	u := call(cachedPrompt("claude-sonnet-4-6", "first question", "a", true), false)
	if u.CacheCreation.Ephemeral1hInputTokens == 0 || u.CacheCreation.Ephemeral5mInputTokens == 0 {
		t.Fatalf("no 1h and 5m cache writes: %+v", u)
	}
	if u = stream(cachedPrompt("claude-sonnet-4-6", "second question", "a", true), false); u.CacheReadInputTokens == 0 {
		t.Fatalf("no cache read: %+v", u)
	}
	// Batched: plain and streamed, on two models.
	call(cachedPrompt("claude-sonnet-4-6", "third question, batched", "a", true), true)
	if u = call(cachedPrompt("claude-sonnet-4-6", "fourth question, batched", "b", true), true); u.CacheCreation.Ephemeral1hInputTokens == 0 {
		t.Fatalf("no 1h cache write in a batch: %+v", u)
	}
	// (a long question: the batch's half price shows in cents)
	if u = call(cachedPrompt("claude-sonnet-4-6", strings.Repeat("Grade this answer, batched. ", 20000), "b", true), true); u.CacheReadInputTokens == 0 {
		t.Fatalf("no read of the batch cache: %+v", u)
	}
	stream(cachedPrompt("claude-haiku-4-5", "fifth question, batched", "a", false), true)
	// A sync call whose hard deadline (1s) runs out before the upstream
	// answers: 504 timeout_error, an error and a budget miss; the upstream
	// may bill it, so it costs its estimated input (a quarter of its
	// body's bytes), at the sync price.
	_, err := client.Messages.New(context.Background(), cachedPrompt("claude-haiku-4-5", "[slow:10m] sixth question", "a", false),
		option.WithHeader("llmfleet-latency-budget-ms", "1000"), option.WithHeader("llmfleet-deadline", "hard"))
	if apiErr := (*anthropic.Error)(nil); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("a spent budget answered %v, want a 504", err)
	}
	want.add(t, anthropic.MessageNewParams{Model: "claude-haiku-4-5"}, anthropic.Usage{InputTokens: (int64(<-cutBody) + 3) / 4}, false)
	// A model priced by the config file only.
	call(cachedPrompt("claude-custom-1", "seventh question", "a", true), false)
	// An error answer, and a model the price table does not know.
	if _, err := client.Messages.New(context.Background(), cachedPrompt("claude-sonnet-4-6", "[error:overloaded_error]", "a", true)); err == nil {
		t.Fatal("no error")
	}
	if _, err := client.Messages.New(context.Background(), cachedPrompt("claude-test", "unpriced", "a", true)); err != nil {
		t.Fatal(err)
	}
	const calls = 10

	// The proxy reports a sync call once the upstream body has ended,
	// which may be a moment after the client has the last byte.
	var s ledger.Summary
	for deadline := time.Now().Add(10 * time.Second); ; {
		getJSON(t, base+"/llmfleet/v1/stats", &s)
		if s.SyncCalls+s.BatchedCalls == calls || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	want.replaySync(t)
	t.Logf("paid $%s, would have paid $%s, saved $%s", cents(want.cost), cents(want.syncEquivalent), cents(want.syncEquivalent-want.cost))
	checkSummary := func(where string, s ledger.Summary, batches bool) {
		t.Helper()
		if s.SyncCalls != 6 || s.BatchedCalls != 4 || s.Errors != 2 || s.BudgetMisses != 1 || s.UnpricedRequests != 1 {
			t.Errorf("%s: calls %d sync %d batched, %d errors, %d budget misses, %d unpriced", where,
				s.SyncCalls, s.BatchedCalls, s.Errors, s.BudgetMisses, s.UnpricedRequests)
		}
		if batches && s.BatchesSubmitted != 4 {
			t.Errorf("%s: %d batches submitted", where, s.BatchesSubmitted)
		}
		checkUSD(t, where+" cost_usd", s.CostUSD, want.cost)
		checkUSD(t, where+" sync_equivalent_usd", s.SyncEquivalentUSD, want.syncEquivalent)
		checkUSD(t, where+" saved_usd", s.SavedUSD, want.syncEquivalent-want.cost)
		for model, cost := range want.byModel {
			checkUSD(t, where+" by_model "+model, s.ByModel[model].CostUSD, cost)
		}
		if b := s.ByRoute["batch"]; b.Calls != 4 || b.SavedUSD <= 0 || s.ByRoute["sync"].SavedUSD != 0 {
			t.Errorf("%s: by route %+v", where, s.ByRoute)
		}
		if len(s.RecentBudgetMisses) != 1 || s.RecentBudgetMisses[0].Model != "claude-haiku-4-5" {
			t.Errorf("%s: recent budget misses %+v", where, s.RecentBudgetMisses)
		}
		// Spend attribution: one key, one client, named by its keyed
		// label (never the key), carrying every call and dollar.
		if len(s.ByClient) != 1 {
			t.Errorf("%s: by client %+v, want one client", where, s.ByClient)
		}
		for label, b := range s.ByClient {
			if !strings.HasPrefix(label, "cred_") || strings.Contains(label, key) ||
				label == (llmfleet.Credential{APIKey: key}).Fingerprint(nil) || b.Calls != calls {
				t.Errorf("%s: client %q: %+v", where, label, b)
			}
			checkUSD(t, where+" by_client cost_usd", b.CostUSD, want.cost)
			checkUSD(t, where+" by_client saved_usd", b.SavedUSD, want.syncEquivalent-want.cost)
		}
	}
	checkSummary("stats", s, true)
	checkCache(t, "stats", s, want)
	t.Logf("cache hit rate %.3f (sync %.3f, batch %.3f), routing misses $%.6f, net saved $%.6f", s.CacheHitRate,
		s.ByRoute["sync"].CacheHitRate, s.ByRoute["batch"].CacheHitRate, s.RoutingMissUSD, s.NetSavedUSD)
	if want.cost < 0.5 || want.syncEquivalent-want.cost < 0.1 {
		t.Fatalf("workload too cheap to check to the cent: $%f", want.cost)
	}

	// The same period read back from the database.
	var stored ledger.Summary
	getJSON(t, base+"/llmfleet/v1/stats?since=1h", &stored)
	checkSummary("stats?since=1h", stored, false)
	checkCache(t, "stats?since=1h", stored, want)
	checkUSD(t, "stats?since=1h routing_miss_usd", stored.RoutingMissUSD, s.RoutingMissUSD)
	if stored.Estimated != s.Estimated || fmt.Sprint(stored.Rewrites) != fmt.Sprint(s.Rewrites) {
		t.Errorf("stats?since=1h: estimated %d rewrites %v; the running totals %d %v", stored.Estimated, stored.Rewrites, s.Estimated, s.Rewrites)
	}

	// Prometheus metrics.
	text, _ := getText(t, base+"/metrics")
	for _, name := range []string{"llmfleet_requests_total", "llmfleet_tokens_total", "llmfleet_cost_usd_total",
		"llmfleet_saved_usd_total", "llmfleet_queue_depth", "llmfleet_batches_in_flight",
		"llmfleet_batch_turnaround_seconds", "llmfleet_budget_misses_total", "llmfleet_upstream_errors_total"} {
		if !strings.Contains(text, "\n"+name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	for _, sample := range []string{
		`llmfleet_requests_total{model="claude-sonnet-4-6",outcome="ok",route="sync"} 2`,
		`llmfleet_requests_total{model="unknown",outcome="overloaded_error",route="sync"} 1`,
		`llmfleet_requests_total{model="claude-haiku-4-5",outcome="timeout_error",route="sync"} 1`,
		`llmfleet_requests_total{model="claude-haiku-4-5",outcome="ok",route="batch"} 1`,
		fmt.Sprintf(`llmfleet_tokens_total{kind="cache_write_1h",model="claude-sonnet-4-6",route="sync"} %d`, want.tokens1h),
		`llmfleet_batch_turnaround_seconds_count{model="claude-sonnet-4-6"} 3`,
		`llmfleet_batch_turnaround_seconds_count{model="claude-haiku-4-5"} 1`,
		"llmfleet_queue_depth 0", "llmfleet_batches_in_flight 0", "llmfleet_budget_misses_total 1",
		`llmfleet_upstream_errors_total{kind="overloaded_error"} 1`,
	} {
		if !strings.Contains(text, "\n"+sample+"\n") {
			t.Errorf("/metrics lacks %s", sample)
		}
	}
	saved := metricValue(t, text, "llmfleet_saved_usd_total")
	checkUSD(t, "llmfleet_saved_usd_total", saved, want.positiveSaved)
	checkUSD(t, "llmfleet_net_saved_usd", metricValue(t, text, "llmfleet_net_saved_usd"), s.NetSavedUSD)
	var misses float64
	for _, l := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(l, "llmfleet_routing_miss_usd_total{"); ok {
			v, _ := strconv.ParseFloat(rest[strings.LastIndex(rest, " ")+1:], 64)
			misses += v
		}
	}
	checkUSD(t, "llmfleet_routing_miss_usd_total", misses, s.RoutingMissUSD)

	// The dashboard.
	page, h := getText(t, base+"/llmfleet/")
	if !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(page, "app.js") {
		t.Errorf("dashboard page: %s\n%s", h.Get("Content-Type"), page)
	}
	var snap dashboard.Snapshot
	getJSON(t, base+"/llmfleet/v1/dashboard", &snap)
	if snap.Stats.BatchesSubmitted != 4 || len(snap.Turnaround["claude-sonnet-4-6"]) != 3 || len(snap.Savings) == 0 {
		t.Errorf("dashboard snapshot %+v", snap)
	}
	// Async tickets still reach the proxy past the dashboard's subtree.
	resp, err := http.Get(base + "/llmfleet/v1/requests/lfr_nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET a ticket without a key: %d", resp.StatusCode)
	}

	// llmfleet stats --url asks the running proxy.
	var tbl bytes.Buffer
	if err := runStats(context.Background(), []string{"--url", base, "--since", "1h"}, &tbl, io.Discard); err != nil {
		t.Fatal(err)
	}
	checkTable(t, tbl.String(), want)
	checkCacheTable(t, tbl.String(), s)

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// llmfleet stats --db reads the database once the proxy has stopped.
	tbl.Reset()
	if err := runStats(context.Background(), []string{"--db", db, "--since", "1h"}, &tbl, io.Discard); err != nil {
		t.Fatal(err)
	}
	checkTable(t, tbl.String(), want)
	checkCacheTable(t, tbl.String(), s)
	if !strings.Contains(tbl.String(), "CLIENT ") || !strings.Contains(tbl.String(), " cred_") {
		t.Errorf("llmfleet stats --db: no by-client table")
	}
	t.Logf("llmfleet stats --db:\n%s", tbl.String())
	var js ledger.Summary
	tbl.Reset()
	if err := runStats(context.Background(), []string{"--db", db, "--from", time.Now().Add(-time.Hour).Format(time.RFC3339), "--json"}, &tbl, io.Discard); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(tbl.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	checkSummary("stats --db --json", js, false)
	checkCache(t, "stats --db --json", js, want)

	// JSON logs, one line per batch lifecycle event, no key, no body.
	var created, delivered int
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("log line is not JSON: %s", l)
		}
		switch rec["msg"] {
		case "batch created":
			created++
		case "batch results delivered":
			delivered++
		}
	}
	if created != 4 || delivered != 4 {
		t.Errorf("%d batch created and %d results delivered lines, want 4 each", created, delivered)
	}
	if all := logs.String(); strings.Contains(all, key) || strings.Contains(all, "first question") {
		t.Errorf("logs hold a key or a body:\n%s", all)
	}
}

// checkTable checks the terminal table of "llmfleet stats".
func checkTable(t *testing.T, tbl string, want expected) {
	t.Helper()
	for _, s := range []string{
		"Paid:             $" + strconv.FormatFloat(want.cost, 'f', 4, 64),
		"Would have paid:  $" + strconv.FormatFloat(want.syncEquivalent, 'f', 4, 64),
		"Saved:            $" + strconv.FormatFloat(want.syncEquivalent-want.cost, 'f', 4, 64),
		"claude-sonnet-4-6", "claude-haiku-4-5", "claude-custom-1", "claude-test *", "batch", "sync",
	} {
		if !strings.Contains(tbl, s) {
			t.Errorf("stats table lacks %q:\n%s", s, tbl)
		}
	}
}

// checkCacheTable checks the cache lines and rows of "llmfleet stats"
// against the summary the proxy served.
func checkCacheTable(t *testing.T, tbl string, s ledger.Summary) {
	t.Helper()
	pct := func(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" }
	for _, want := range []string{
		"Routing misses:   $" + strconv.FormatFloat(s.RoutingMissUSD, 'f', 4, 64),
		"Net saved:        $" + strconv.FormatFloat(s.NetSavedUSD, 'f', 4, 64),
		"Cache hit rate:   " + pct(s.CacheHitRate),
	} {
		if !strings.Contains(tbl, want) {
			t.Errorf("stats table lacks %q:\n%s", want, tbl)
		}
	}
	for _, route := range []string{"sync", "batch"} {
		b := s.ByRoute[route]
		row := fmt.Sprintf("%s %s %s %s %s", route, group(b.Tokens.CacheRead), group(b.Tokens.CacheWrite5m), group(b.Tokens.CacheWrite1h), pct(b.CacheHitRate))
		if !strings.Contains(strings.Join(strings.Fields(tbl), " "), row) {
			t.Errorf("stats table lacks the cache row %q:\n%s", row, tbl)
		}
	}
}

// group writes n with thousands separators, as the stats table does.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// metricValue returns the value of an unlabelled sample.
func metricValue(t *testing.T, text, name string) float64 {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no %s", name)
	return 0
}
