package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/llmfleet/llmfleet/geminiemu"
	"github.com/llmfleet/llmfleet/ledger"
)

// TestServeGeminiFace: serve --gemini-url serves the Gemini API under
// /gemini, and the official Go SDK pointed at it works unchanged: a sync
// call, a stream, a patient call sent flex and calls sent batched, under
// /v1beta and /v1 (APIVersion "v1"), each billed once; the live stats
// (the dashboard's) and the stored ledger name the Gemini spend by
// provider and by model, with a cost.
func TestServeGeminiFace(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	emu := &geminiemu.Server{BatchTurnaround: 100 * time.Millisecond}
	up := httptest.NewServer(emu)
	defer up.Close()
	anth := start(t, bin, logs, "emulate", "--listen", "127.0.0.1:0", "--turnaround", "1s")
	serve := start(t, bin, logs, "serve", "--listen", "127.0.0.1:0", "--anthropic-url", anth.url, "--gemini-url", up.URL,
		"--db", filepath.Join(dir, "db"), "--secret-file", filepath.Join(dir, "secret"),
		"--batch-window", "100ms", "--poll-interval", "100ms", "--max-poll-interval", "200ms")
	ctx := context.Background()
	clientOf := func(version, budget, route string) *genai.Client {
		h := http.Header{}
		if budget != "" {
			h.Set("llmfleet-latency-budget-ms", budget)
		}
		if route != "" {
			h.Set("llmfleet-route", route)
		}
		c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "g-key", Backend: genai.BackendGeminiAPI,
			HTTPOptions: genai.HTTPOptions{BaseURL: serve.url + "/gemini", APIVersion: version, Headers: h}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	client := func(budget, route string) *genai.Client { return clientOf("", budget, route) }
	resp, err := client("", "").Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("sync one"), nil)
	if err != nil || resp.Text() != "Answer to: sync one" || resp.SDKHTTPResponse.Headers.Get("Llmfleet-Route") != "sync" {
		t.Fatalf("sync: %v %+v", err, resp)
	}
	// The stable version, @google/genai 3.x's default, is routed too.
	for _, route := range []string{"sync", "batch"} {
		p := "v1 " + route
		resp, err = clientOf("v1", "3600000", route).Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text(p), nil)
		if err != nil || resp.Text() != "Answer to: "+p || resp.SDKHTTPResponse.Headers.Get("Llmfleet-Route") != route {
			t.Fatalf("%s under /v1: %v %+v", route, err, resp)
		}
	}
	if n := emu.Stats().Requests["/v1/models/gemini-2.5-flash:generateContent"]; n != 1 {
		t.Errorf("%d calls upstream under /v1, want the v1 sync one", n)
	}
	var text string
	for r, err := range client("", "").Models.GenerateContentStream(ctx, "gemini-2.5-flash", genai.Text("a stream"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		text += r.Text()
	}
	if text != "Answer to: a stream" {
		t.Errorf("streamed %q", text)
	}
	// A patient call goes flex (the same discount, sooner).
	resp, err = client("3600000", "").Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("flex one"), nil)
	if err != nil || resp.Text() != "Answer to: flex one" || resp.SDKHTTPResponse.Headers.Get("Llmfleet-Route") != "flex" {
		t.Fatalf("flex: %v %+v", err, resp)
	}
	patient := client("3600000", "batch")
	var wg sync.WaitGroup
	for _, p := range []string{"batch one", "batch two"} {
		wg.Go(func() {
			resp, err := patient.Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text(p), nil)
			if err != nil || resp.Text() != "Answer to: "+p {
				t.Errorf("%s: %v %+v", p, err, resp)
				return
			}
			if h := resp.SDKHTTPResponse; h == nil || h.Headers.Get("Llmfleet-Route") != "batch" {
				t.Errorf("%s: not batched: %+v", p, h)
			}
		})
	}
	wg.Wait()
	for _, p := range []string{"batch one", "batch two", "sync one", "a stream", "flex one", "v1 sync", "v1 batch"} {
		if b := emu.Stats().Billed; b[p] != 1 {
			t.Fatalf("%q billed %d times: %v", p, b[p], b)
		}
	}
	// The Gemini spend, by provider and by model, live (what the
	// dashboard draws) and in the stored ledger.
	st, err := http.Get(serve.url + "/llmfleet/v1/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(st.Body)
	geminiSpend(t, "/llmfleet/v1/stats", buf.Bytes(), 7)
	serve.cmd.Process.Signal(syscall.SIGTERM)
	serve.cmd.Wait()
	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"stats", "--db", filepath.Join(dir, "db"), "--since", "0", "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("llmfleet stats: %d %s", code, errOut.String())
	}
	geminiSpend(t, "llmfleet stats --db", out.Bytes(), 7)
}

// geminiSpend checks that a ledger summary (JSON) names the Gemini spend
// by provider and by model: calls answered, each route's, a cost.
func geminiSpend(t *testing.T, where string, summary []byte, calls int64) {
	t.Helper()
	var s struct {
		ByProvider map[string]ledger.Breakdown `json:"by_provider"`
		ByModel    map[string]ledger.Breakdown `json:"by_model"`
	}
	if err := json.Unmarshal(summary, &s); err != nil {
		t.Fatalf("%s: %v %s", where, err, summary)
	}
	for name, b := range map[string]ledger.Breakdown{"provider gemini": s.ByProvider["gemini"], "model gemini-2.5-flash": s.ByModel["gemini-2.5-flash"]} {
		if b.Calls != calls || b.Errors != 0 || b.SyncCalls == 0 || b.FlexCalls != 1 || b.BatchedCalls == 0 || !(b.CostUSD > 0) || !(b.SavedUSD > 0) {
			t.Errorf("%s: %s: %+v", where, name, b)
		}
	}
}
