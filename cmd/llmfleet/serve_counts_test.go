package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmfleet/llmfleet/emulator"
	"github.com/llmfleet/llmfleet/geminiemu"
	"github.com/llmfleet/llmfleet/openaiemu"
)

// TestServeSyncCallsAgree: the shutdown line's stats.sync_calls is the
// cost ledger's count of sync calls, over the three faces (a Gemini call
// counted too) and a batched call beside them; a streamed /v1/responses
// call is priced from its response.completed; the dollar figures of the
// log are printed without float noise.
func TestServeSyncCallsAgree(t *testing.T) {
	anth := httptest.NewServer(&emulator.Server{})
	defer anth.Close()
	oai := httptest.NewServer(&openaiemu.Server{BatchTurnaround: 50 * time.Millisecond})
	defer oai.Close()
	gem := httptest.NewServer(&geminiemu.Server{})
	defer gem.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(lineWriter, 4)
	var logs syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--listen", "127.0.0.1:0", "--anthropic-url", anth.URL, "--openai-url", oai.URL, "--gemini-url", gem.URL,
			"--log-format", "json", "--db", filepath.Join(dir, "x.db"), "--batch-window", "50ms", "--poll-interval", "50ms", "--max-poll-interval", "100ms"},
			out, &logs)
	}()
	var start struct{ Addr string }
	select {
	case line := <-out:
		if err := json.Unmarshal([]byte(line), &start); err != nil {
			t.Fatal(err)
		}
	case err := <-done:
		t.Fatalf("serve ended: %v", err)
	}
	send := func(path, body string, hdr ...string) string {
		t.Helper()
		req, _ := http.NewRequest("POST", start.Addr+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	send("/v1/messages", `{"model":"claude-sonnet-4-6","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`,
		"X-Api-Key", "sk-ant-a", "Anthropic-Version", "2023-06-01")
	if s := send("/openai/v1/responses", `{"model":"gpt-4.1","stream":true,"input":"a streamed response"}`, "Authorization", "Bearer sk-a"); !strings.Contains(s, "response.completed") {
		t.Fatalf("responses stream %q", s)
	}
	send("/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"a gemini stream"}]}]}`,
		"X-Goog-Api-Key", "g-key")
	send("/openai/v1/chat/completions", `{"model":"gpt-4.1","messages":[{"role":"user","content":"batched"}]}`,
		"Authorization", "Bearer sk-a", "Llmfleet-Route", "batch")
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	var stopped, ledger map[string]any
	ledgerLine := ""
	for _, line := range strings.Split(logs.String(), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		switch m["msg"] {
		case "stopped":
			stopped = m
		case "cost ledger":
			ledger, ledgerLine = m, line
		}
	}
	stats, _ := stopped["stats"].(map[string]any)
	if stats["sync_calls"] != float64(3) || ledger["sync_calls"] != float64(3) || ledger["batched_calls"] != float64(1) {
		t.Fatalf("stopped %v\ncost ledger %v", stopped, ledger)
	}
	if ledger["unpriced_requests"] != float64(0) || ledger["paid_usd"].(float64) <= 0 {
		t.Errorf("cost ledger %v", ledger)
	}
	if noise := regexp.MustCompile(`[0-9]\.[0-9]{10,}|e-0[0-9]`).FindString(ledgerLine); noise != "" {
		t.Errorf("float noise %q in %s", noise, ledgerLine)
	}
}
