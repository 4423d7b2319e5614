package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/llmfleet/llmfleet/geminiemu"
)

// TestServeGeminiFace: serve --gemini-url serves the Gemini API under
// /gemini, and the official Go SDK pointed at it works unchanged: a sync
// call, a stream, a patient call sent flex and calls sent batched, each
// billed once;
// the stats name the Gemini spend.
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
	client := func(budget, route string) *genai.Client {
		h := http.Header{}
		if budget != "" {
			h.Set("llmfleet-latency-budget-ms", budget)
		}
		if route != "" {
			h.Set("llmfleet-route", route)
		}
		c, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: "g-key", Backend: genai.BackendGeminiAPI,
			HTTPOptions: genai.HTTPOptions{BaseURL: serve.url + "/gemini", Headers: h}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	resp, err := client("", "").Models.GenerateContent(ctx, "gemini-2.5-flash", genai.Text("sync one"), nil)
	if err != nil || resp.Text() != "Answer to: sync one" || resp.SDKHTTPResponse.Headers.Get("Llmfleet-Route") != "sync" {
		t.Fatalf("sync: %v %+v", err, resp)
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
	if b := emu.Stats().Billed; b["batch one"] != 1 || b["batch two"] != 1 || b["sync one"] != 1 || b["a stream"] != 1 || b["flex one"] != 1 {
		t.Fatalf("billed %v", b)
	}
	st, err := http.Get(serve.url + "/llmfleet/v1/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(st.Body)
	if !strings.Contains(buf.String(), `"gemini"`) {
		t.Errorf("stats name no gemini spend: %s", buf.String())
	}
}
