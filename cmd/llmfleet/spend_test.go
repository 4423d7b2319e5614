package main

import (
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/geminiemu"
	"github.com/llmfleet/llmfleet/openaiemu"
	"github.com/llmfleet/llmfleet/proxy"
	"github.com/llmfleet/llmfleet/sqlite"
)

// spendFleet is a serve in this process, with proxy-held keys for
// alice ("alice-key") and bob ("bob-key") on all three faces, over the
// providers' emulators.
type spendFleet struct {
	base string
	emu  *emulator.Server
}

// spendUpstreams starts the emulators and returns the config lines
// naming them, with the proxy-held keys, and the Anthropic emulator.
func spendUpstreams(t *testing.T) (string, *emulator.Server) {
	t.Helper()
	emu := &emulator.Server{Turnaround: func(string, *rand.Rand) time.Duration { return 0 }}
	anth := httptest.NewServer(emu)
	t.Cleanup(anth.Close)
	oai := httptest.NewServer(&openaiemu.Server{BatchTurnaround: time.Millisecond})
	t.Cleanup(oai.Close)
	gem := httptest.NewServer(&geminiemu.Server{BatchTurnaround: time.Millisecond})
	t.Cleanup(gem.Close)
	t.Setenv("LLMFLEET_SPEND_ANTHROPIC", "sk-ant-upstream")
	t.Setenv("LLMFLEET_SPEND_OPENAI", "sk-openai-upstream")
	t.Setenv("LLMFLEET_SPEND_GEMINI", "g-upstream")
	return "anthropic-url: " + anth.URL + "\nopenai-url: " + oai.URL + "\ngemini-url: " + gem.URL + "\n" +
		"batch-window: 5ms\npoll-interval: 2ms\nmax-poll-interval: 5ms\nturnaround-prior: 10ms\n" +
		"upstream-api-key-env: LLMFLEET_SPEND_ANTHROPIC\nopenai-upstream-api-key-env: LLMFLEET_SPEND_OPENAI\n" +
		"gemini-upstream-api-key-env: LLMFLEET_SPEND_GEMINI\nclient-keys:\n" +
		"  alice: " + proxy.HashKey("alice-key") + "\n  bob: " + proxy.HashKey("bob-key") + "\n", emu
}

// serveInProcess runs serve with the config file and args until the
// test ends, and returns its base URL.
func serveInProcess(t *testing.T, config string, args ...string) string {
	base, _ := serveStoppable(t, config, args...)
	return base
}

// serveStoppable is serveInProcess, and returns how to stop serve first.
func serveStoppable(t *testing.T, config string, args ...string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(lineWriter, 4)
	done := make(chan error, 1)
	args = append([]string{"--config", writeFile(t, config), "--listen", "127.0.0.1:0"}, args...)
	go func() { done <- runServe(ctx, args, out, io.Discard) }()
	var line string
	select {
	case line = <-out:
	case err := <-done:
		cancel()
		t.Fatalf("serve ended: %v", err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return strings.Fields(strings.TrimPrefix(line, "llmfleet serving on "))[0], stop
}

// faceCall is one routed call of a face, real-shaped.
type faceCall struct {
	face, path, body string
	key              func(h http.Header, key string)
}

var spendFaces = []faceCall{
	{"anthropic", "/v1/messages", `{"model":"claude-sonnet-4-6","max_tokens":64,"messages":[{"role":"user","content":"spend: %s"}]}`,
		func(h http.Header, key string) { h.Set("X-Api-Key", key); h.Set("Anthropic-Version", "2023-06-01") }},
	{"openai", "/openai/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"spend: %s"}]}`,
		func(h http.Header, key string) { h.Set("Authorization", "Bearer "+key) }},
	{"gemini", "/gemini/v1beta/models/gemini-2.0-flash:generateContent", `{"contents":[{"role":"user","parts":[{"text":"spend: %s"}]}]}`,
		func(h http.Header, key string) { h.Set("X-Goog-Api-Key", key) }},
}

// call sends the face's call as key with the prompt and headers (name,
// value, ...) and returns the response and its body.
func (f faceCall) call(t *testing.T, base, key, prompt string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("POST", base+f.path, strings.NewReader(strings.Replace(f.body, "%s", prompt, 1)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	f.key(req.Header, key)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// paid writes to a SQLite database, before serve opens it, what clients
// paid now, as another replica would have.
func paid(t *testing.T, path string, usd map[string]float64) {
	t.Helper()
	d := &sqlite.DB{Path: path}
	if err := d.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	var entries []llmfleet.LedgerEntry
	for client, v := range usd {
		entries = append(entries, llmfleet.LedgerEntry{Time: time.Now(), Provider: "anthropic", Model: "claude-sonnet-4-6",
			Route: llmfleet.RouteSync, Outcome: "ok", CostUSD: v, Priced: true, Client: client})
	}
	if err := d.AddLedger(t.Context(), entries); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

// clientStats returns the clients of /llmfleet/v1/stats.
func clientStats(t *testing.T, base string) []map[string]any {
	t.Helper()
	resp, err := http.Get(base + "/llmfleet/v1/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct {
		Clients []map[string]any `json:"clients"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s.Clients
}

// TestSpendLimitReject: a client at its daily limit (paid by another
// replica: the shared store says so) is refused 429 on every face, in
// that face's envelope, naming the limit and when it resets, with
// Retry-After; another client goes on; the stats show both.
func TestSpendLimitReject(t *testing.T) {
	up, _ := spendUpstreams(t)
	db := filepath.Join(t.TempDir(), "llmfleet.db")
	paid(t, db, map[string]float64{"alice": 50.01, "bob": 3})
	clients := "clients:\n  alice: {daily-usd: 50, monthly-usd: 1000, over-limit: reject}\n  bob: {daily-usd: 50}\n"
	base, stop := serveStoppable(t, up+clients, "--db", db)
	midnight := llmfleet.UTCDay(time.Now()).AddDate(0, 0, 1).Format(time.RFC3339)
	for _, f := range spendFaces {
		resp, body := f.call(t, base, "alice-key", "over")
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" ||
			resp.Header.Get("X-Should-Retry") != "false" {
			t.Fatalf("%s: %d %v %s", f.face, resp.StatusCode, resp.Header, body)
		}
		var env struct {
			Type  string `json:"type"`
			Error struct {
				Type, Message, Status string
				Code                  any
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &env); err != nil {
			t.Fatalf("%s: %v: %s", f.face, err, body)
		}
		e := env.Error
		want := map[string]bool{
			"anthropic": env.Type == "error" && e.Type == "rate_limit_error",
			"openai":    e.Type == "insufficient_quota" && e.Code == "insufficient_quota",
			"gemini":    e.Status == "RESOURCE_EXHAUSTED" && e.Code == 429.0,
		}[f.face]
		if !want || !strings.Contains(e.Message, "Client alice has reached its daily-usd limit of $50.00") ||
			!strings.Contains(e.Message, midnight) {
			t.Errorf("%s: envelope %s", f.face, body)
		}
		if resp, body := f.call(t, base, "bob-key", "within"); resp.StatusCode != 200 {
			t.Errorf("%s: bob within his limit: %d %s", f.face, resp.StatusCode, body)
		}
	}
	cs := clientStats(t, base)
	if len(cs) != 2 || cs[0]["client"] != "alice" || cs[0]["limit_reached"] != "daily-usd" || cs[0]["today_usd"].(float64) < 50.01 ||
		cs[0]["daily_usd"] != 50.0 || cs[0]["monthly_usd"] != 1000.0 || cs[1]["client"] != "bob" || cs[1]["limit_reached"] != nil {
		t.Errorf("stats clients: %v", cs)
	}
	// llmfleet stats, from the running serve, then from its database.
	for _, args := range [][]string{{"--url", base}, {"--db", db, "--config", writeFile(t, clients)}} {
		if args[0] == "--db" {
			stop()
		}
		var out strings.Builder
		if err := runStats(t.Context(), args, &out, io.Discard); err != nil {
			t.Fatalf("stats %v: %v", args, err)
		}
		if !regexp.MustCompile(`(?m)^ *alice +\$50\.0100 +\$50\.0000 +\$50\.0100 +\$1,000\.0000 +reject +no +daily-usd reached until ` +
			midnight + `$`).MatchString(out.String()) {
			t.Errorf("stats %v: no line of alice's limits:\n%s", args, out.String())
		}
	}
}

// TestSpendLimitBatchOnly: over its limit, a batch-only client's calls
// are taken only batched: one whose budget a batch can meet is batched
// (the route reason says why), one without a budget or forced sync is
// refused 429 saying so.
func TestSpendLimitBatchOnly(t *testing.T) {
	up, _ := spendUpstreams(t)
	db := filepath.Join(t.TempDir(), "llmfleet.db")
	paid(t, db, map[string]float64{"alice": 1000})
	base := serveInProcess(t, up+"clients:\n  alice: {monthly-usd: 1000, over-limit: batch-only}\n", "--db", db)
	for _, f := range spendFaces {
		resp, body := f.call(t, base, "alice-key", "patient "+f.face, "Llmfleet-Latency-Budget-Ms", "600000")
		if resp.StatusCode != 200 || resp.Header.Get("Llmfleet-Route") != "batch" ||
			!strings.HasPrefix(resp.Header.Get("Llmfleet-Route-Reason"), "batch-only: client alice has reached its monthly-usd limit of $1000.00") {
			t.Errorf("%s: a patient call: %d %v %s", f.face, resp.StatusCode, resp.Header, body)
		}
		resp, body = f.call(t, base, "alice-key", "impatient")
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "cannot be met by a batch") {
			t.Errorf("%s: a call without a budget: %d %s", f.face, resp.StatusCode, body)
		}
		resp, body = f.call(t, base, "alice-key", "forced", "Llmfleet-Route", "sync")
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "drop llmfleet-route: sync") {
			t.Errorf("%s: a forced sync call: %d %s", f.face, resp.StatusCode, body)
		}
	}
}

// TestSpendZDR: a zero-data-retention client's calls are never batched,
// whatever their budget, and the route reason says why; asking for the
// batch route is refused; another client's patient call is batched.
func TestSpendZDR(t *testing.T) {
	up, emu := spendUpstreams(t)
	base := serveInProcess(t, up+"clients:\n  alice: {zdr: true}\n", "--db", filepath.Join(t.TempDir(), "llmfleet.db"))
	for _, f := range spendFaces {
		resp, body := f.call(t, base, "bob-key", "bob patient "+f.face, "Llmfleet-Latency-Budget-Ms", "600000")
		if resp.StatusCode != 200 || resp.Header.Get("Llmfleet-Route") != "batch" {
			t.Fatalf("%s: bob's patient call not batched: %d %v %s", f.face, resp.StatusCode, resp.Header, body)
		}
		resp, body = f.call(t, base, "alice-key", "alice patient "+f.face, "Llmfleet-Latency-Budget-Ms", "600000")
		if route := resp.Header.Get("Llmfleet-Route"); resp.StatusCode != 200 || route == "batch" ||
			!strings.HasPrefix(resp.Header.Get("Llmfleet-Route-Reason"), "zdr: client alice has zero data retention") {
			t.Errorf("%s: alice's patient call: %d %v %s", f.face, resp.StatusCode, resp.Header, body)
		}
		resp, body = f.call(t, base, "alice-key", "alice forced", "Llmfleet-Route", "batch")
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "never batched") {
			t.Errorf("%s: alice's forced batch: %d %s", f.face, resp.StatusCode, body)
		}
	}
	// Flex is a sync tier: a patient ZDR call of a model that has one goes flex.
	flex := faceCall{"gemini", "/gemini/v1beta/models/gemini-2.5-flash:generateContent", spendFaces[2].body, spendFaces[2].key}
	resp, body := flex.call(t, base, "alice-key", "alice flex", "Llmfleet-Latency-Budget-Ms", "600000")
	if resp.StatusCode != 200 || resp.Header.Get("Llmfleet-Route") != "flex" || resp.Header.Get("Llmfleet-Route-Reason") == "" {
		t.Errorf("alice's patient call of a flex model: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	for _, s := range emu.Stats().Submissions {
		if strings.Contains(s.Text, "alice") {
			t.Errorf("alice's prompt %q was batched", s.Text)
		}
	}
}

// TestSpendConfigErrors: a clients section that cannot be applied stops
// serve with an error naming the client and what to change.
func TestSpendConfigErrors(t *testing.T) {
	for _, tc := range []struct{ clients, want string }{
		{"  alice: {daily-usd: 5, over-limit: queue}\n", `clients: alice: over-limit is "queue"; use reject or batch-only`},
		{"  alice: {daily-usd: -5}\n", "clients: alice: daily-usd is -5; give a positive number of USD, or leave it out for no limit"},
		{"  bob: {monthly-usd: -0.5}\n", "clients: bob: monthly-usd is -0.5"},
		{"  alice: {daily-usd: 5, over-limit: batch-only, zdr: true}\n", "cannot apply to a zdr client, whose calls are never batched; use over-limit: reject"},
		{"  alice: {daily_usd: 5}\n", `clients: alice: unknown setting "daily_usd"; use daily-usd, monthly-usd, over-limit or zdr`},
		{"  alice: {daily-usd: fifty}\n", "clients: alice: yaml: unmarshal errors"},
		{"  alice: 50\n", "clients: alice must map settings"},
		{"  - alice\n", "clients must map each client's name to its limits"},
	} {
		f, err := parseServeFlags([]string{"--config", writeFile(t, "clients:\n"+tc.clients)}, io.Discard)
		if err == nil {
			_, err = f.config(nil)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("clients:\n%s: %v, want %q", tc.clients, err, tc.want)
		}
	}
	f, err := parseServeFlags([]string{"--config", writeFile(t, "clients:\n  alice: {daily-usd: 50, monthly-usd: 1000, over-limit: batch-only}\n  bob: {zdr: true}\n")}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.config(nil)
	if err != nil || len(cfg.Clients) != 2 || cfg.Clients["alice"].MonthlyUSD != 1000 || !cfg.Clients["bob"].ZDR {
		t.Fatalf("valid clients: %+v, %v", cfg.Clients, err)
	}
}

// TestSpendLimitByKeyLabel: without proxy-held keys a client is named by
// its key label, as the stats show it; a limit given under that label
// holds for the key on every face, across a restart (the label is keyed
// with the instance secret, the spend is in the database).
func TestSpendLimitByKeyLabel(t *testing.T) {
	up, _ := spendUpstreams(t)
	up = up[:strings.Index(up, "upstream-api-key-env")] // the clients' own keys go upstream
	dir := t.TempDir()
	args := []string{"--db", filepath.Join(dir, "llmfleet.db"), "--secret-file", filepath.Join(dir, "secret")}
	base, stop := serveStoppable(t, up, args...)
	if resp, body := spendFaces[0].call(t, base, "sk-label-key", "paid under a label"); resp.StatusCode != 200 {
		t.Fatalf("first call: %d %s", resp.StatusCode, body)
	}
	var label string
	for deadline := time.Now().Add(30 * time.Second); label == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stats never named the key's label")
		}
		resp, err := http.Get(base + "/llmfleet/v1/stats")
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			ByClient map[string]json.RawMessage `json:"by_client"`
		}
		err = json.NewDecoder(resp.Body).Decode(&s)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for k := range s.ByClient {
			label = k
		}
	}
	stop()
	base = serveInProcess(t, up+"clients:\n  "+label+": {daily-usd: 0.000001}\n", args...)
	for _, f := range spendFaces {
		resp, body := f.call(t, base, "sk-label-key", "over under a label")
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "Client "+label+" has reached its daily-usd limit") {
			t.Errorf("%s: %d %s", f.face, resp.StatusCode, body)
		}
		if resp, body := f.call(t, base, "sk-other-key", "another key"); resp.StatusCode != 200 {
			t.Errorf("%s: another key: %d %s", f.face, resp.StatusCode, body)
		}
	}
}
