package proxy_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/llmfleet/llmfleet"
	"github.com/llmfleet/llmfleet/dispatch"
	"github.com/llmfleet/llmfleet/gemini"
	"github.com/llmfleet/llmfleet/geminiemu"
	"github.com/llmfleet/llmfleet/proxy"
	"github.com/llmfleet/llmfleet/sqlite"
	"github.com/llmfleet/llmfleet/vault"
)

// geminiStack is llmfleet on loopback for the Gemini face: proxy →
// dispatch.Dispatcher → gemini.Provider → geminiemu.Server.
// readTicket reads ticket id under the Gemini face with key.
func (st *geminiStack) readTicket(t *testing.T, id, key string) (int, string) {
	t.Helper()
	res, err := st.ts.Client().Get(st.ts.URL + proxy.GeminiRequestsPath + id + "?key=" + key)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// awaitTicket reads ticket id with key until it is no longer pending (202),
// for 10 s at the most.
func (st *geminiStack) awaitTicket(t *testing.T, id, key string) (int, string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	code, body := st.readTicket(t, id, key)
	for code == http.StatusAccepted && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		code, body = st.readTicket(t, id, key)
	}
	return code, body
}

type geminiStack struct {
	emu *geminiemu.Server
	d   *dispatch.Dispatcher
	srv *proxy.Server
	ts  *httptest.Server

	mu      sync.Mutex
	entries []llmfleet.LedgerEntry
}

// newGeminiStack starts the stack; srv, if not nil, is the proxy to put
// in front (its settings kept); durable keeps the dispatcher's requests in
// a SQLite store (tickets).
func newGeminiStack(t *testing.T, emu *geminiemu.Server, srv *proxy.Server, durable ...bool) *geminiStack {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	if emu.BatchTurnaround == 0 {
		emu.BatchTurnaround = 5 * time.Millisecond
	}
	emuTS := httptest.NewServer(emu)
	t.Cleanup(emuTS.Close)
	st := &geminiStack{emu: emu}
	st.d = &dispatch.Dispatcher{
		Providers: []llmfleet.Provider{&gemini.Provider{BaseURL: emuTS.URL}},
		Policy: dispatch.Policy{BatchWindow: 5 * time.Millisecond, PollInterval: 2 * time.Millisecond,
			MaxPollInterval: 5 * time.Millisecond, TurnaroundPrior: 20 * time.Millisecond, FlexRetryBackoff: time.Millisecond},
		Logger: quiet,
	}
	if len(durable) > 0 && durable[0] {
		dir := t.TempDir()
		db := &sqlite.DB{Path: filepath.Join(dir, "llmfleet.db"), Logger: quiet}
		if err := db.Open(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		v, err := vault.Open(filepath.Join(dir, "secret"))
		if err != nil {
			t.Fatal(err)
		}
		st.d.Store, st.d.Sealer = db, v
	}
	if err := st.d.Open(); err != nil {
		t.Fatal(err)
	}
	if srv == nil {
		srv = &proxy.Server{}
	}
	srv.Submitter = st.d
	srv.GeminiUpstream, _ = url.Parse(emuTS.URL)
	srv.PingInterval = time.Millisecond
	srv.Logger = quiet
	srv.Observe = func(e llmfleet.LedgerEntry) {
		st.mu.Lock()
		st.entries = append(st.entries, e)
		st.mu.Unlock()
	}
	st.srv = srv
	st.ts = httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		st.ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := st.d.Close(ctx); err != nil {
			t.Errorf("dispatcher close: %v", err)
		}
	})
	return st
}

// ledger returns the sync route's ledger entries so far.
func (st *geminiStack) ledger() []llmfleet.LedgerEntry {
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]llmfleet.LedgerEntry(nil), st.entries...)
}

// client returns an official SDK client of key pointed at the face (under
// base, e.g. "/budget/600000", if not ""), sending headers h.
func (st *geminiStack) client(t *testing.T, key, base string, h http.Header) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(t.Context(), &genai.ClientConfig{APIKey: key, Backend: genai.BackendGeminiAPI,
		HTTPClient: st.ts.Client(), HTTPOptions: genai.HTTPOptions{BaseURL: st.ts.URL + base + proxy.GeminiPrefix, Headers: h}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// budget returns the headers asking for a latency budget of ms.
func budget(ms string) http.Header { return http.Header{proxy.HeaderBudget: {ms}} }

const geminiPrompt = "What is the capital of France?"
const geminiAnswer = "Answer to: What is the capital of France?"

// TestGeminiFaceSDK: the official Go SDK pointed at the face works
// unchanged on every route: sync, streamed, batched (by the budget header
// and by the /budget/ prefix), a batched stream synthesised, and the
// ledger reads the sync calls' usage.
func TestGeminiFaceSDK(t *testing.T) {
	st := newGeminiStack(t, &geminiemu.Server{Keys: []string{"k1"}}, nil)
	ctx := t.Context()
	for _, c := range []struct {
		name, base string
		h          http.Header
		route      string
	}{
		{"sync", "", nil, "sync"},
		{"batch by header", "", budget("3600000"), "batch"},
		{"batch by prefix", "/budget/3600000", nil, "batch"},
	} {
		cl := st.client(t, "k1", c.base, c.h)
		resp, err := cl.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text(geminiPrompt), nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if resp.Text() != geminiAnswer || resp.UsageMetadata == nil || resp.UsageMetadata.PromptTokenCount == 0 {
			t.Errorf("%s: %q, usage %+v", c.name, resp.Text(), resp.UsageMetadata)
		}
		if got := resp.SDKHTTPResponse.Headers.Get(proxy.HeaderRoute); got != c.route {
			t.Errorf("%s: route %q, want %q", c.name, got, c.route)
		}
		var text strings.Builder
		chunks := 0
		for chunk, err := range cl.Models.GenerateContentStream(ctx, "gemini-2.5-flash", genai.Text(geminiPrompt), nil) {
			if err != nil {
				t.Fatalf("%s stream: %v", c.name, err)
			}
			text.WriteString(chunk.Text())
			chunks++
		}
		if text.String() != geminiAnswer || chunks < 2 {
			t.Errorf("%s stream: %q in %d chunks", c.name, text.String(), chunks)
		}
	}
	var syncs int
	for _, e := range st.ledger() {
		if e.Provider != "gemini" || e.Outcome != "ok" || e.Usage.InputTokens == 0 || e.Usage.OutputTokens == 0 || e.Tier != llmfleet.TierStandard {
			t.Errorf("ledger entry %+v", e)
		}
		syncs++
	}
	if syncs != 2 {
		t.Errorf("%d sync ledger entries, want 2", syncs)
	}
}

// TestGeminiFaceFlex: a call forced to flex is sent with serviceTier
// "flex" and served there; shed, it falls back to the standard tier
// within its budget.
func TestGeminiFaceFlex(t *testing.T) {
	var mu sync.Mutex
	shed := 0
	em := &geminiemu.Server{FlexModels: []string{"gemini-2.5-flash"}, Shed: func(string) int { mu.Lock(); defer mu.Unlock(); return shed }}
	st := newGeminiStack(t, em, nil)
	cl := st.client(t, "k1", "", http.Header{proxy.HeaderRoute: {"flex"}, proxy.HeaderBudget: {"600000"}})
	resp, err := cl.Models.GenerateContent(t.Context(), "gemini-2.5-flash", genai.Text(geminiPrompt), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != geminiAnswer || resp.SDKHTTPResponse.Headers.Get("X-Gemini-Service-Tier") != "flex" {
		t.Errorf("served: %q, tier %q", resp.Text(), resp.SDKHTTPResponse.Headers.Get("X-Gemini-Service-Tier"))
	}
	mu.Lock()
	shed = http.StatusServiceUnavailable
	mu.Unlock()
	// The engine retries a shed call while its budget leaves room for a
	// standard call, then falls back: a short budget falls back soon (or
	// at once, if the engine predicts no room for a flex attempt).
	cl = st.client(t, "k1", "", http.Header{proxy.HeaderRoute: {"flex"}, proxy.HeaderBudget: {"2000"}})
	resp, err = cl.Models.GenerateContent(t.Context(), "gemini-2.5-flash", genai.Text(geminiPrompt), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != geminiAnswer || resp.SDKHTTPResponse.Headers.Get("X-Gemini-Service-Tier") == "flex" {
		t.Errorf("fallback: %q, tier %q", resp.Text(), resp.SDKHTTPResponse.Headers.Get("X-Gemini-Service-Tier"))
	}
	t.Logf("%d flex calls shed", st.emu.Stats().Shed)
	// A model without a flex tier (400 naming the service tier): the
	// standard tier at once, whatever the budget.
	cl = st.client(t, "k1", "", http.Header{proxy.HeaderRoute: {"flex"}, proxy.HeaderBudget: {"600000"}})
	resp, err = cl.Models.GenerateContent(t.Context(), "gemini-2.0-flash", genai.Text(geminiPrompt), nil)
	if err != nil || resp.Text() != geminiAnswer || resp.SDKHTTPResponse.Headers.Get("X-Gemini-Service-Tier") == "flex" {
		t.Errorf("no flex tier: %v", err)
	}
	l := st.ledger()
	if len(l) != 3 || l[0].Tier != llmfleet.TierFlex || l[1].Tier != llmfleet.TierStandard || l[1].Route != llmfleet.RouteFlex || !l[1].BudgetMet || l[2].Tier != llmfleet.TierStandard {
		t.Errorf("ledger %+v", l)
	}
}

// TestGeminiFaceRescue: a batched call whose batch does not end within
// its budget is rescued by a sync call and answered within it.
func TestGeminiFaceRescue(t *testing.T) {
	st := newGeminiStack(t, &geminiemu.Server{BatchPending: time.Hour}, nil)
	cl := st.client(t, "k1", "", http.Header{proxy.HeaderRoute: {"batch"}, proxy.HeaderBudget: {"3000"}})
	resp, err := cl.Models.GenerateContent(t.Context(), "gemini-2.5-flash", genai.Text(geminiPrompt), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text() != geminiAnswer {
		t.Errorf("rescued answer %q", resp.Text())
	}
	if n := st.emu.Stats().Requests["/v1beta/models/gemini-2.5-flash:generateContent"]; n != 1 {
		t.Errorf("%d sync calls upstream, want the one rescue", n)
	}
}

// TestGeminiFaceErrors: errors come in Google's envelope, the SDK reads
// them as APIErrors; the key is taken as x-goog-api-key and as ?key=.
func TestGeminiFaceErrors(t *testing.T) {
	st := newGeminiStack(t, &geminiemu.Server{Keys: []string{"k1"}}, nil)
	ctx := t.Context()
	var ae genai.APIError
	_, err := st.client(t, "wrong", "", nil).Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("hi"), nil)
	if !errors.As(err, &ae) || ae.Code != http.StatusBadRequest || ae.Status != "INVALID_ARGUMENT" {
		t.Errorf("wrong key (sync): %v", err)
	}
	_, err = st.client(t, "k1", "", budget("nonsense")).Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("hi"), nil)
	if !errors.As(err, &ae) || ae.Code != http.StatusBadRequest || ae.Status != "INVALID_ARGUMENT" || !strings.Contains(ae.Message, "budget") {
		t.Errorf("bad budget: %v", err)
	}
	_, err = st.client(t, "k1", "", budget("3600000")).Models.GenerateContent(ctx, "no-such-model", genai.Text("hi"), nil)
	if !errors.As(err, &ae) || ae.Code < 400 {
		t.Errorf("batched unknown model: %v", err)
	}
	for _, c := range []struct {
		path, key string
		want      int
		status    string
	}{
		{"/gemini/v1beta/models/gemini-2.5-flash:generateContent?key=k1", "", 200, ""},
		{"/gemini/v1beta/models/gemini-2.5-flash:generateContent", "", 403, "PERMISSION_DENIED"},
		{"/gemini/v1beta/models/gemini-2.5-flash:generateContent", "k1", 200, ""},
		{"/gemini/v1beta/models?key=k1", "", 200, ""},
	} {
		method, body := http.MethodPost, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
		if !strings.Contains(c.path, ":") {
			method, body = http.MethodGet, ""
		}
		req, _ := http.NewRequest(method, st.ts.URL+c.path, strings.NewReader(body))
		if c.key != "" {
			req.Header.Set("x-goog-api-key", c.key)
		}
		res, err := st.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != c.want || (c.status != "" && !strings.Contains(string(b), `"status":"`+c.status+`"`)) {
			t.Errorf("%s (key %q): %d %s", c.path, c.key, res.StatusCode, b)
		}
	}
}

// TestGeminiFaceTickets: Prefer: respond-async answers 202 with a ticket
// at once; the ticket reads, under the face, as the call's answer once
// its batch ended; an Idempotency-Key names the same request again;
// another key does not see it (404 in Google's envelope).
func TestGeminiFaceTickets(t *testing.T) {
	st := newGeminiStack(t, &geminiemu.Server{}, nil, true)
	post := func(key string) (int, string) {
		req, _ := http.NewRequest("POST", st.ts.URL+"/gemini/v1beta/models/gemini-2.5-flash:generateContent",
			strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"`+geminiPrompt+`"}]}]}`))
		req.Header.Set("x-goog-api-key", "k1")
		req.Header.Set("Prefer", "respond-async")
		req.Header.Set("Idempotency-Key", key)
		res, err := st.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode, res.Header.Get(proxy.HeaderRequestID)
	}
	status, id := post("once")
	if status != http.StatusAccepted || id == "" {
		t.Fatalf("respond-async: %d, id %q", status, id)
	}
	if _, again := post("once"); again != id {
		t.Errorf("retried with the same Idempotency-Key: %q, want %q", again, id)
	}
	read := func(key string) (int, string) { return st.readTicket(t, id, key) }
	code, body := st.awaitTicket(t, id, "k1")
	if code != http.StatusOK || !strings.Contains(body, geminiAnswer) {
		t.Errorf("ticket: %d %s", code, body)
	}
	if code, body := read("k2"); code != http.StatusNotFound || !strings.Contains(body, `"status":"NOT_FOUND"`) {
		t.Errorf("another key's read: %d %s", code, body)
	}
}
